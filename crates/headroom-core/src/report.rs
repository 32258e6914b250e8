//! Reports of recorded runs, worth attaching where a figure is promised: the run's facts, its
//! points, and its curves (throughput and peak memory against batch, budget and chosen batch
//! marked) as Markdown with an SVG beside it, one standalone HTML file (the SVG inline, no
//! network), CSV of the points, or JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::ledger::{Ledger, RunContext, RunRecord};
use crate::mounts::MountClass;
use crate::plot::{sweep_svg, ChartSpec};
use crate::protocol::Point;
use crate::readiness::{Conditions, PowerSource};
use crate::CoreError;

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Md,
    Html,
    Csv,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        match s {
            "md" | "markdown" => Ok(Self::Md),
            "html" => Ok(Self::Html),
            "csv" => Ok(Self::Csv),
            "json" => Ok(Self::Json),
            other => Err(CoreError::InvalidInput(format!(
                "unknown report format {other:?}: use md, html, csv or json"
            ))),
        }
    }

    fn ext(self) -> &'static str {
        match self {
            Self::Md => "md",
            Self::Html => "html",
            Self::Csv => "csv",
            Self::Json => "json",
        }
    }
}

/// The columns of a point in CSV, in order.
pub const CSV_COLUMNS: [&str; 12] = [
    "batch",
    "status",
    "samples_per_s",
    "step_ms_p50",
    "step_ms_p95",
    "data_ms",
    "forward_ms",
    "backward_ms",
    "peak_bytes",
    "peak_process_bytes",
    "gpu_busy",
    "message",
];

/// One CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

/// The points as CSV, a header line first.
pub fn points_csv(points: &[Point]) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for p in points {
        let row = [
            p.batch.to_string(),
            p.status.as_str().to_owned(),
            opt(p.samples_per_s),
            opt(p.step_ms_p50),
            opt(p.step_ms_p95),
            opt(p.data_ms),
            opt(p.forward_ms),
            opt(p.backward_ms),
            opt(p.peak_bytes),
            opt(p.peak_process_bytes),
            opt(p.gpu_busy),
            p.message.clone().unwrap_or_default(),
        ];
        let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// The conditions recorded at run `id`'s start, when there are any (runs recorded before they
/// were kept have none).
pub fn conditions(ledger: &Ledger, id: i64) -> Result<Option<Conditions>, CoreError> {
    Ok(ledger
        .samples::<Conditions>(id, "conditions")?
        .into_iter()
        .next())
}

/// Where the ledger lived and who held memory at run `id`'s start, when recorded.
pub fn context(ledger: &Ledger, id: i64) -> Result<Option<RunContext>, CoreError> {
    Ok(ledger
        .samples::<RunContext>(id, "context")?
        .into_iter()
        .next())
}

/// The context's rows: the mount of Headroom's folder and the apps holding memory.
pub fn context_facts(x: Option<&RunContext>) -> Vec<(&'static str, String)> {
    let unknown = || "unknown".to_owned();
    let mount = x
        .and_then(|x| x.data_mount.as_ref())
        .map_or_else(unknown, |m| {
            let class = match m.class {
                MountClass::Local => "local",
                MountClass::Network => "network",
                MountClass::External => "external drive",
                MountClass::Unknown => "unknown kind",
            };
            format!("{class}: {} {} at {}", m.fs_type, m.source, m.mount_point)
        });
    let apps = x.map_or_else(unknown, |x| {
        let held: Vec<String> = x
            .apps
            .iter()
            .filter(|a| a.bytes > 0)
            .map(|a| {
                let names = if a.apps.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", a.apps.join(", "))
                };
                format!(
                    "{} {}{names}",
                    a.group,
                    crate::budget::format_bytes(a.bytes)
                )
            })
            .collect();
        if held.is_empty() {
            "none of the conferencing apps, IDEs or browsers".into()
        } else {
            held.join("; ")
        }
    });
    vec![("Headroom folder on", mount), ("apps holding memory", apps)]
}

/// The run's facts as (label, value) rows, its conditions at the start among them; what was not
/// recorded says `unknown`.
pub fn facts(r: &RunRecord, c: Option<&Conditions>) -> Vec<(&'static str, String)> {
    let unknown = || "unknown".to_owned();
    let power = match c.and_then(|c| c.power_source) {
        Some(PowerSource::Ac) => "AC adapter".to_owned(),
        Some(PowerSource::Battery) => "battery".to_owned(),
        Some(PowerSource::Ups) => "UPS".to_owned(),
        Some(PowerSource::Unknown) | None => unknown(),
    };
    let battery = match c.map(|c| c.battery.as_ref()) {
        None => unknown(),
        Some(None) => "none".to_owned(),
        Some(Some(b)) => format!(
            "{}{}",
            b.percent.map_or_else(unknown, |p| format!("{p} %")),
            b.state
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default()
        ),
    };
    let low_power = match c.and_then(|c| c.low_power_mode) {
        Some(true) => "on".to_owned(),
        Some(false) => "off".to_owned(),
        None => unknown(),
    };
    let thermal = match c {
        Some(c) if !c.thermal_warnings.is_empty() => c.thermal_warnings.join("; "),
        Some(c) if c.thermal_exposed => "no warning".to_owned(),
        _ => unknown(),
    };
    let mut rows = vec![
        ("kind", r.kind.clone()),
        ("status", r.status.as_str().to_owned()),
        ("started", r.started_at.clone()),
        ("finished", r.finished_at.clone().unwrap_or_else(unknown)),
        ("host", r.host.clone()),
        ("device", format!("{} ({})", r.device, r.device_name)),
        ("workload", r.workload.clone()),
        ("dtype / mode", format!("{} / {}", r.dtype, r.mode)),
        ("libtorch", r.libtorch.clone()),
        (
            "git",
            match (&r.git_commit, r.git_dirty) {
                (Some(c), Some(true)) => format!("{c} (uncommitted changes)"),
                (Some(c), _) => c.clone(),
                (None, _) => unknown(),
            },
        ),
        (
            "budget",
            r.budget_bytes
                .map_or_else(unknown, crate::budget::format_bytes),
        ),
        (
            "chosen batch",
            r.chosen_batch
                .map_or_else(|| "none".into(), |b| b.to_string()),
        ),
        (
            "peak memory",
            r.peak_bytes
                .map_or_else(unknown, crate::budget::format_bytes),
        ),
        (
            "CPU fallback",
            match r.fallback {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => unknown(),
            },
        ),
        ("note", r.note.clone().unwrap_or_default()),
    ];
    rows.extend([
        ("power", power),
        ("battery", battery),
        ("Low Power Mode", low_power),
        ("thermal", thermal),
        (
            "CPU governor",
            c.and_then(|c| c.cpu_governor.clone())
                .unwrap_or_else(unknown),
        ),
    ]);
    rows
}

/// The run's chart (a sweep with points), as SVG.
pub fn chart(r: &RunRecord, points: &[Point]) -> Result<Option<String>, CoreError> {
    if points.is_empty() {
        return Ok(None);
    }
    sweep_svg(&ChartSpec {
        points,
        summary: r.summary.as_ref(),
        budget_bytes: r.budget_bytes,
        width: 720,
        height: 560,
    })
    .map(Some)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn title(r: &RunRecord) -> String {
    format!(
        "Headroom run {}: {} of {} on {}",
        r.id, r.kind, r.workload, r.device
    )
}

fn points_rows(points: &[Point]) -> Vec<[String; 6]> {
    let f = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"));
    points
        .iter()
        .map(|p| {
            [
                p.batch.to_string(),
                p.status.as_str().to_owned(),
                f(p.samples_per_s),
                f(p.step_ms_p50),
                f(p.step_ms_p95),
                p.peak_bytes
                    .map_or_else(|| "-".to_owned(), crate::budget::format_bytes),
            ]
        })
        .collect()
}

const POINT_HEADER: [&str; 6] = [
    "batch",
    "status",
    "samples/s",
    "p50 ms",
    "p95 ms",
    "peak memory",
];

/// Markdown, the chart referenced as `svg_name` beside it.
pub fn markdown(
    r: &RunRecord,
    (c, x): (Option<&Conditions>, Option<&RunContext>),
    points: &[Point],
    svg_name: Option<&str>,
) -> String {
    let mut s = format!("# {}\n\n| fact | value |\n|---|---|\n", title(r));
    for (k, v) in facts(r, c).into_iter().chain(context_facts(x)) {
        let _ = writeln!(s, "| {k} | {} |", v.replace('|', "\\|"));
    }
    if let Some(sum) = &r.summary {
        let _ = writeln!(s, "\n**Recommendation**: {}", sum.reason);
    }
    if let Some(name) = svg_name {
        let _ = writeln!(s, "\n![throughput and peak memory against batch]({name})");
    }
    if !points.is_empty() {
        let _ = writeln!(s, "\n| {} |", POINT_HEADER.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(POINT_HEADER.len()));
        for row in points_rows(points) {
            let _ = writeln!(s, "| {} |", row.join(" | "));
        }
    }
    s
}

/// One standalone HTML file: styles and the SVG inline, nothing fetched.
pub fn html(
    r: &RunRecord,
    (c, x): (Option<&Conditions>, Option<&RunContext>),
    points: &[Point],
    svg: Option<&str>,
) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n\
         <style>body{{font:14px system-ui,sans-serif;margin:2em;color:#1f2937}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #d1d5db;\
         padding:4px 8px;text-align:left}}th{{background:#f3f4f6}}</style></head><body>\n\
         <h1>{t}</h1>\n<table>\n",
        t = escape(&title(r))
    );
    for (k, v) in facts(r, c).into_iter().chain(context_facts(x)) {
        let _ = writeln!(s, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    s.push_str("</table>\n");
    if let Some(sum) = &r.summary {
        let _ = writeln!(
            s,
            "<p><strong>Recommendation</strong>: {}</p>",
            escape(&sum.reason)
        );
    }
    if let Some(svg) = svg {
        let _ = writeln!(s, "<figure>{svg}</figure>");
    }
    if !points.is_empty() {
        s.push_str("<table><tr>");
        for h in POINT_HEADER {
            let _ = write!(s, "<th>{h}</th>");
        }
        s.push_str("</tr>\n");
        for row in points_rows(points) {
            s.push_str("<tr>");
            for c in row {
                let _ = write!(s, "<td>{}</td>", escape(&c));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
    }
    s.push_str("</body></html>\n");
    s
}

fn write(path: &Path, text: &str) -> Result<PathBuf, CoreError> {
    std::fs::write(path, text).map_err(|source| CoreError::Io {
        what: "cannot write the report",
        path: path.display().to_string(),
        source,
    })?;
    Ok(path.to_path_buf())
}

/// Writes run `id`'s report in `format` into `dir` (`run-ID.EXT`, and `run-ID.svg` beside a
/// Markdown report); returns the files written.
pub fn export(
    ledger: &Ledger,
    id: i64,
    format: Format,
    dir: &Path,
) -> Result<Vec<PathBuf>, CoreError> {
    let (r, points) = ledger.get_run(id)?;
    let cond = conditions(ledger, id)?;
    let ctx = context(ledger, id)?;
    std::fs::create_dir_all(dir).map_err(|source| CoreError::Io {
        what: "cannot create the report folder",
        path: dir.display().to_string(),
        source,
    })?;
    let base = dir.join(format!("run-{id}.{}", format.ext()));
    let mut files = Vec::new();
    match format {
        Format::Json => {
            let doc = serde_json::json!({ "run": r, "conditions": cond, "context": ctx, "points": points });
            files.push(write(&base, &serde_json::to_string_pretty(&doc)?)?);
        }
        Format::Csv => files.push(write(&base, &points_csv(&points))?),
        Format::Md => {
            let svg = chart(&r, &points)?;
            let name = format!("run-{id}.svg");
            if let Some(svg) = &svg {
                files.push(write(&dir.join(&name), svg)?);
            }
            files.insert(
                0,
                write(
                    &base,
                    &markdown(
                        &r,
                        (cond.as_ref(), ctx.as_ref()),
                        &points,
                        svg.as_ref().map(|_| name.as_str()),
                    ),
                )?,
            );
        }
        Format::Html => {
            let svg = chart(&r, &points)?;
            files.push(write(
                &base,
                &html(&r, (cond.as_ref(), ctx.as_ref()), &points, svg.as_deref()),
            )?);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::PointStatus;

    #[test]
    fn csv_quotes_what_needs_it() {
        let mut p = Point::failed(8, PointStatus::Oom, "MPS backend out of memory, \"8 GiB\"");
        p.peak_bytes = Some(1 << 30);
        let text = points_csv(&[p]);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_COLUMNS.join(",").as_str()));
        assert_eq!(
            lines.next(),
            Some("8,oom,,,,,,,1073741824,,,\"MPS backend out of memory, \"\"8 GiB\"\"\"")
        );
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
