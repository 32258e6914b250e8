//! Reports of recorded runs, worth attaching where a figure is promised: the run's facts, its
//! points, and its curves (throughput and peak memory against batch, budget and chosen batch
//! marked) as Markdown with an SVG beside it, one standalone HTML file (the SVG inline, no
//! network), CSV of the points, or JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::datasum::DataRecord;
use crate::epochs::{EpochSample, EpochThresholds};
use crate::ledger::{Ledger, RunContext, RunRecord};
use crate::monitor::MemoryReading;
use crate::mounts::MountClass;
use crate::plot::{epochs_svg, png_from_svg, readings_svg, sweep_svg, ChartSpec};
use crate::protocol::Hello;
use crate::protocol::Point;
use crate::readiness::{Conditions, PowerSource};
use crate::remote::rtt::ArtifactRtt;
use crate::CoreError;

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Md,
    Html,
    Csv,
    Json,
    /// The run's charts alone, as SVG.
    Svg,
    /// The run's charts alone, as PNG.
    Png,
}

impl Format {
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        match s {
            "md" | "markdown" => Ok(Self::Md),
            "html" => Ok(Self::Html),
            "csv" => Ok(Self::Csv),
            "json" => Ok(Self::Json),
            "svg" => Ok(Self::Svg),
            "png" => Ok(Self::Png),
            other => Err(CoreError::InvalidInput(format!(
                "unknown report format {other:?}: use md, html, csv, json, svg or png"
            ))),
        }
    }

    fn ext(self) -> &'static str {
        match self {
            Self::Md => "md",
            Self::Html => "html",
            Self::Csv => "csv",
            Self::Json => "json",
            Self::Svg => "svg",
            Self::Png => "png",
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

/// What was recorded around a run besides its row and points; each part `None` where the run
/// predates it or it could not be known.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recorded {
    /// Power, battery, Low Power Mode, thermal state at the start.
    pub conditions: Option<Conditions>,
    /// Where the ledger lived, who held memory, the user's Python's torch.
    pub context: Option<RunContext>,
    /// What the worker reported when it started (threads, memory it saw).
    pub hello: Option<Hello>,
    /// Checksums of the dataset files named with `--data`, and the mounts they are on.
    pub data: Option<DataRecord>,
    /// The round trip to the artifact store, measured where the run ran.
    pub artifact_rtt: Option<ArtifactRtt>,
}

fn first<T: serde::de::DeserializeOwned>(
    ledger: &Ledger,
    id: i64,
    kind: &str,
) -> Result<Option<T>, CoreError> {
    Ok(ledger.samples::<T>(id, kind)?.into_iter().next())
}

/// Everything recorded around run `id`.
pub fn recorded(ledger: &Ledger, id: i64) -> Result<Recorded, CoreError> {
    Ok(Recorded {
        conditions: first(ledger, id, "conditions")?,
        context: first(ledger, id, "context")?,
        hello: first(ledger, id, "hello")?,
        data: first(ledger, id, "data")?,
        artifact_rtt: first(ledger, id, "artifact_rtt")?,
    })
}

/// A mount for people: "network: nfs4 nas:/export at /mnt/data".
fn mount_text(m: &crate::mounts::MountFacts) -> String {
    let class = match m.class {
        MountClass::Local => "local",
        MountClass::Network => "network",
        MountClass::External => "external drive",
        MountClass::Unknown => "unknown kind",
    };
    format!("{class}: {} {} at {}", m.fs_type, m.source, m.mount_point)
}

/// The context's rows: the user's Python, the mount of Headroom's folder and the apps holding
/// memory.
fn context_facts(x: Option<&RunContext>) -> Vec<(&'static str, String)> {
    let unknown = || "unknown".to_owned();
    let mount = x
        .and_then(|x| x.data_mount.as_ref())
        .map_or_else(unknown, mount_text);
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
    let python = x
        .and_then(|x| x.python.as_ref())
        .map_or_else(unknown, |p| match &p.torch {
            Some(v) => format!("torch {v} ({})", p.python),
            None => format!("no torch in {}", p.python),
        });
    vec![
        ("your Python", python),
        ("Headroom folder on", mount),
        ("apps holding memory", apps),
    ]
}

/// The run's facts as (label, value) rows, its conditions at the start among them; what was not
/// recorded says `unknown`.
pub fn facts(r: &RunRecord, rec: &Recorded) -> Vec<(&'static str, String)> {
    let c = rec.conditions.as_ref();
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
        ("kind", r.kind.to_string()),
        ("status", r.status.as_str().to_owned()),
        ("started", r.started_at.clone()),
        ("finished", r.finished_at.clone().unwrap_or_else(unknown)),
        ("host", r.host.clone()),
        ("device", format!("{} ({})", r.device, r.device_name)),
        ("workload", r.workload.clone()),
        ("dtype / mode", r.dtype_mode()),
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
                Some(true) => {
                    // A wrapped run keeps the operators PyTorch named in its report.
                    let ops: Vec<&str> = r
                        .report
                        .as_ref()
                        .and_then(|x| x.get("fallback_ops"))
                        .and_then(serde_json::Value::as_array)
                        .map(|a| a.iter().filter_map(serde_json::Value::as_str).collect())
                        .unwrap_or_default();
                    if ops.is_empty() {
                        "yes".into()
                    } else {
                        format!("yes: {}", ops.join(", "))
                    }
                }
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
        (
            "threads",
            rec.hello
                .as_ref()
                .map_or_else(unknown, |h| h.threads.to_string()),
        ),
        ("data", data_fact(rec.data.as_ref())),
        (
            "data on",
            rec.data.as_ref().map_or_else(
                || "not named (--data)".into(),
                |d| {
                    if d.mounts.is_empty() {
                        unknown()
                    } else {
                        d.mounts
                            .iter()
                            .map(mount_text)
                            .collect::<Vec<_>>()
                            .join("; ")
                    }
                },
            ),
        ),
        (
            "artifact store",
            rec.artifact_rtt
                .as_ref()
                .map_or_else(|| "not named".into(), ArtifactRtt::describe),
        ),
    ]);
    rows.extend(context_facts(rec.context.as_ref()));
    rows
}

/// The data row: how many files, how large, and one checksum for the set.
fn data_fact(data: Option<&DataRecord>) -> String {
    match data.map(|d| d.shards.as_slice()) {
        None => "not named (--data)".into(),
        Some([]) => "no files".into(),
        Some(s) => format!(
            "{} file{}, {}, set sha256 {}",
            s.len(),
            if s.len() == 1 { "" } else { "s" },
            crate::budget::format_bytes(s.iter().map(|x| x.bytes).sum()),
            &crate::datasum::digest(s)[..16]
        ),
    }
}

/// One of a run's pictures.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Its file name after `run-ID`: empty for the batch chart, `-memory` for memory.
    pub suffix: &'static str,
    /// What it shows, for the text around it.
    pub alt: &'static str,
    pub svg: String,
}

/// The size reports draw at (the app's panels draw smaller).
const REPORT_CHART: (u32, u32) = (720, 560);
const REPORT_MEMORY_CHART: (u32, u32) = (720, 400);
/// PNGs are drawn at twice the SVG's size, sharp on a high-density screen.
pub const PNG_SCALE: f32 = 2.0;

/// The leak thresholds run `id` was judged with; runs recorded before they were kept use the
/// configured ones.
fn thresholds(ledger: &Ledger, id: i64) -> Result<EpochThresholds, CoreError> {
    if let Some(t) = ledger
        .samples::<EpochThresholds>(id, "thresholds")?
        .into_iter()
        .next()
    {
        return Ok(t);
    }
    Ok(crate::config::load().map(|c| c.epochs).unwrap_or_default())
}

/// The run's pictures: throughput and peak memory against batch when it has points, memory per
/// epoch when it has epochs, else the watched tree's memory over time when it has readings.
pub fn charts(ledger: &Ledger, r: &RunRecord, points: &[Point]) -> Result<Vec<Chart>, CoreError> {
    charts_at(ledger, r, points, REPORT_CHART, REPORT_MEMORY_CHART)
}

/// [`charts`] drawn at other sizes (the app's popover draws them smaller, so text stays legible).
pub fn charts_at(
    ledger: &Ledger,
    r: &RunRecord,
    points: &[Point],
    (bw, bh): (u32, u32),
    (w, h): (u32, u32),
) -> Result<Vec<Chart>, CoreError> {
    let mut out = Vec::new();
    if !points.is_empty() {
        out.push(Chart {
            suffix: "",
            alt: "throughput and peak memory against batch",
            svg: sweep_svg(&ChartSpec {
                points,
                summary: r.summary.as_ref(),
                budget_bytes: r.budget_bytes,
                width: bw,
                height: bh,
            })?,
        });
    }
    let epochs: Vec<EpochSample> = ledger.samples(r.id, "epoch")?;
    if !epochs.is_empty() {
        out.push(Chart {
            suffix: "-memory",
            alt: "memory per epoch with the leak threshold",
            svg: epochs_svg(&epochs, &thresholds(ledger, r.id)?, w, h)?,
        });
    } else {
        let readings: Vec<MemoryReading> = ledger.samples(r.id, "memory")?;
        if !readings.is_empty() {
            out.push(Chart {
                suffix: "-memory",
                alt: "the process tree's memory over time with the leak threshold",
                svg: readings_svg(&readings, thresholds(ledger, r.id)?.leak_growth, w, h)?,
            });
        }
    }
    Ok(out)
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

/// Markdown, each picture referenced by its base name (`run-7`, `run-7-memory`): the SVG shown,
/// the PNG beside it linked.
pub fn markdown(
    r: &RunRecord,
    rec: &Recorded,
    points: &[Point],
    images: &[(String, &str)],
) -> String {
    let mut s = format!("# {}\n\n| fact | value |\n|---|---|\n", title(r));
    for (k, v) in facts(r, rec) {
        let _ = writeln!(s, "| {k} | {} |", v.replace('|', "\\|"));
    }
    if let Some(sum) = &r.summary {
        let _ = writeln!(s, "\n**Recommendation**: {}", sum.reason);
    }
    for (base, alt) in images {
        let _ = writeln!(s, "\n![{alt}]({base}.svg) ([PNG]({base}.png))");
    }
    for (header, rows) in tables(points, rec) {
        let _ = writeln!(s, "\n| {} |", header.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(header.len()));
        for row in rows {
            let _ = writeln!(s, "| {} |", row.join(" | ").replace('\n', " "));
        }
    }
    s
}

/// The tables below the facts: the points, and the dataset files with their checksums.
fn tables(points: &[Point], rec: &Recorded) -> Vec<(Vec<&'static str>, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    if !points.is_empty() {
        out.push((
            POINT_HEADER.to_vec(),
            points_rows(points).into_iter().map(Vec::from).collect(),
        ));
    }
    if let Some(data) = rec
        .data
        .as_ref()
        .map(|d| &d.shards)
        .filter(|d| !d.is_empty())
    {
        out.push((
            vec!["data file", "size", "sha256"],
            data.iter()
                .map(|d| {
                    vec![
                        d.path.clone(),
                        crate::budget::format_bytes(d.bytes),
                        d.sha256.clone(),
                    ]
                })
                .collect(),
        ));
    }
    out
}

/// One standalone HTML file: styles and the SVG inline, nothing fetched.
pub fn html(r: &RunRecord, rec: &Recorded, points: &[Point], svgs: &[&str]) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n\
         <style>body{{font:14px system-ui,sans-serif;margin:2em;color:#1f2937}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #d1d5db;\
         padding:4px 8px;text-align:left}}th{{background:#f3f4f6}}</style></head><body>\n\
         <h1>{t}</h1>\n<table>\n",
        t = escape(&title(r))
    );
    for (k, v) in facts(r, rec) {
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
    for svg in svgs {
        let _ = writeln!(s, "<figure>{svg}</figure>");
    }
    for (header, rows) in tables(points, rec) {
        s.push_str("<table><tr>");
        for h in header {
            let _ = write!(s, "<th>{h}</th>");
        }
        s.push_str("</tr>\n");
        for row in rows {
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

fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<PathBuf, CoreError> {
    std::fs::write(path, bytes).map_err(|source| CoreError::Io {
        what: "cannot write the report",
        path: path.display().to_string(),
        source,
    })?;
    Ok(path.to_path_buf())
}

fn create_dir(dir: &Path) -> Result<(), CoreError> {
    std::fs::create_dir_all(dir).map_err(|source| CoreError::Io {
        what: "cannot create the report folder",
        path: dir.display().to_string(),
        source,
    })
}

/// Writes `svg` as `BASE.svg` and `BASE.png` in `dir`.
fn write_pictures(dir: &Path, base: &str, svg: &str) -> Result<Vec<PathBuf>, CoreError> {
    Ok(vec![
        write(&dir.join(format!("{base}.svg")), svg)?,
        write(
            &dir.join(format!("{base}.png")),
            png_from_svg(svg, PNG_SCALE)?,
        )?,
    ])
}

/// Writes run `id`'s report in `format` into `dir` (`run-ID.EXT`; a Markdown report has its
/// pictures beside it as SVG and PNG); returns the files written.
pub fn export(
    ledger: &Ledger,
    id: i64,
    format: Format,
    dir: &Path,
) -> Result<Vec<PathBuf>, CoreError> {
    let (r, points) = ledger.get_run(id)?;
    let rec = recorded(ledger, id)?;
    create_dir(dir)?;
    let base = dir.join(format!("run-{id}.{}", format.ext()));
    let mut files = Vec::new();
    match format {
        Format::Json => {
            let doc = serde_json::json!({ "run": r, "recorded": rec, "points": points });
            files.push(write(&base, serde_json::to_string_pretty(&doc)?)?);
        }
        Format::Csv => files.push(write(&base, points_csv(&points))?),
        Format::Md => {
            let charts = charts(ledger, &r, &points)?;
            let mut images = Vec::new();
            for c in &charts {
                let name = format!("run-{id}{}", c.suffix);
                files.extend(write_pictures(dir, &name, &c.svg)?);
                images.push((name, c.alt));
            }
            let md = markdown(&r, &rec, &points, &images);
            files.insert(0, write(&base, md)?);
        }
        Format::Html => {
            let charts = charts(ledger, &r, &points)?;
            let svgs: Vec<&str> = charts.iter().map(|c| c.svg.as_str()).collect();
            files.push(write(&base, html(&r, &rec, &points, &svgs))?);
        }
        Format::Svg | Format::Png => {
            let charts = charts(ledger, &r, &points)?;
            if charts.is_empty() {
                return Err(CoreError::InvalidInput(format!(
                    "run {id} ({}) has no curves to draw: export it as md, html, csv or json",
                    r.kind
                )));
            }
            for c in &charts {
                let path = dir.join(format!("run-{id}{}.{}", c.suffix, format.ext()));
                files.push(if format == Format::Svg {
                    write(&path, &c.svg)?
                } else {
                    write(&path, png_from_svg(&c.svg, PNG_SCALE)?)?
                });
            }
        }
    }
    Ok(files)
}

/// How the legend of a side-by-side chart names a run: its id, host and device.
pub fn overlay_label(r: &RunRecord) -> String {
    format!("run {} · {} · {} {}", r.id, r.host, r.device, r.workload)
}

/// Runs with points drawn side by side (one against another, local against remote) as
/// `compare-A-B….svg` and `.png` in `dir`; `None` when fewer than two of them have points.
pub fn export_overlay(
    ledger: &Ledger,
    ids: &[i64],
    dir: &Path,
) -> Result<Option<Vec<PathBuf>>, CoreError> {
    let mut runs = Vec::new();
    for &id in ids {
        let (r, points) = ledger.get_run(id)?;
        if !points.is_empty() {
            runs.push((overlay_label(&r), r.id, points));
        }
    }
    if runs.len() < 2 {
        return Ok(None);
    }
    let svg = overlay_chart(&runs)?;
    create_dir(dir)?;
    let ids: Vec<String> = runs.iter().map(|r| r.1.to_string()).collect();
    write_pictures(dir, &format!("compare-{}", ids.join("-")), &svg).map(Some)
}

/// The side-by-side chart of (label, id, points) runs.
pub fn overlay_chart(runs: &[(String, i64, Vec<Point>)]) -> Result<String, CoreError> {
    overlay_chart_at(runs, REPORT_CHART)
}

/// [`overlay_chart`] at another size.
pub fn overlay_chart_at(
    runs: &[(String, i64, Vec<Point>)],
    (w, h): (u32, u32),
) -> Result<String, CoreError> {
    let overlays: Vec<crate::plot::Overlay<'_>> = runs
        .iter()
        .map(|(label, _, points)| crate::plot::Overlay { label, points })
        .collect();
    crate::plot::overlay_svg(&overlays, w, h)
}

/// Draws runs `ids` side by side into `path`, SVG or PNG by its extension.
pub fn write_overlay(ledger: &Ledger, ids: &[i64], path: &Path) -> Result<(), CoreError> {
    let mut runs = Vec::new();
    for &id in ids {
        let (r, points) = ledger.get_run(id)?;
        if points.is_empty() {
            return Err(CoreError::InvalidInput(format!(
                "run {id} ({}) has no points to draw; pick sweeps (`headroom ledger list`)",
                r.kind
            )));
        }
        runs.push((overlay_label(&r), id, points));
    }
    let svg = overlay_chart(&runs)?;
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") => write(path, svg).map(|_| ()),
        Some(e) if e.eq_ignore_ascii_case("png") => {
            write(path, png_from_svg(&svg, PNG_SCALE)?).map(|_| ())
        }
        _ => Err(CoreError::InvalidInput(format!(
            "{}: name the chart file .svg or .png",
            path.display()
        ))),
    }
}

/// Facts left out of a comparison: they differ between any two runs and explain nothing.
const NOT_COMPARED: [&str; 7] = [
    "status",
    "started",
    "finished",
    "note",
    "chosen batch",
    "peak memory",
    "apps holding memory",
];

/// `ledger compare`: the figures at the batches both runs measured, then every recorded fact
/// that differs and could explain a difference (versions, power, thermal, threads, data, mount).
pub fn compare(ledger: &Ledger, a: i64, b: i64) -> Result<Vec<String>, CoreError> {
    let (ra, pa) = ledger.get_run(a)?;
    let (rb, pb) = ledger.get_run(b)?;
    let (xa, xb) = (recorded(ledger, a)?, recorded(ledger, b)?);
    let mut out = vec![format!(
        "run {} ({} of {} on {}, {}) vs run {} ({} of {} on {}, {})",
        ra.id,
        ra.kind,
        ra.workload,
        ra.device,
        ra.host,
        rb.id,
        rb.kind,
        rb.workload,
        rb.device,
        rb.host
    )];
    let mut common = 0;
    for p in &pa {
        let Some(q) = pb.iter().find(|q| q.batch == p.batch) else {
            continue;
        };
        if let (Some(x), Some(y)) = (p.samples_per_s, q.samples_per_s) {
            common += 1;
            let mem = match (p.peak_bytes, q.peak_bytes) {
                (Some(m), Some(n)) => format!(
                    ", peak {} vs {}",
                    crate::budget::format_bytes(m),
                    crate::budget::format_bytes(n)
                ),
                _ => String::new(),
            };
            out.push(format!(
                "  batch {}: {x:.1} vs {y:.1} samples/s ({:+.1} %){mem}",
                p.batch,
                (y / x - 1.0) * 100.0
            ));
        }
    }
    if common == 0 {
        out.push("  no batch measured in both runs".into());
    }
    let fa = facts(&ra, &xa);
    let fb = facts(&rb, &xb);
    let differ: Vec<String> = fa
        .iter()
        .zip(&fb)
        .filter(|((k, x), (_, y))| x != y && !NOT_COMPARED.contains(k))
        .map(|((k, x), (_, y))| format!("  {k}: {x} vs {y}"))
        .collect();
    if differ.is_empty() {
        out.push("facts that could explain a difference: none differ among those recorded".into());
    } else {
        out.push("facts that differ and could explain it:".into());
        out.extend(differ);
    }
    for (r, x) in [(&ra, &xa), (&rb, &xb)] {
        if x.conditions.is_none() {
            out.push(format!(
                "run {} has no conditions recorded (power, battery, Low Power Mode, thermal): \
                 it predates them",
                r.id
            ));
        }
    }
    Ok(out)
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
