//! A run rendered: its points as CSV, its charts (SVG, PNG), Markdown and standalone HTML.

use super::*;

/// The columns of a point in CSV, in order.
pub const CSV_COLUMNS: [&str; 13] = [
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
    "samples_per_joule",
    "message",
];

/// One CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
pub(super) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

pub(super) fn opt<T: ToString>(v: Option<T>) -> String {
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
            opt(p.joules_per_sample().map(|j| 1.0 / j)),
            p.message.clone().unwrap_or_default(),
        ];
        let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
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
pub(super) const REPORT_CHART: (u32, u32) = (720, 560);
pub(super) const REPORT_MEMORY_CHART: (u32, u32) = (720, 400);
/// PNGs are drawn at twice the SVG's size, sharp on a high-density screen.
pub const PNG_SCALE: f32 = 2.0;

/// The leak thresholds run `id` was judged with; runs recorded before they were kept use the
/// configured ones.
pub(super) fn thresholds(ledger: &Ledger, id: i64) -> Result<EpochThresholds, CoreError> {
    if let Some(t) = ledger
        .samples::<EpochThresholds>(id, "thresholds")?
        .into_iter()
        .next()
    {
        return Ok(t);
    }
    Ok(headroom_store::config::load()
        .map(|c| c.epochs)
        .unwrap_or_default())
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

pub(super) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(super) fn title(r: &RunRecord) -> String {
    format!(
        "Headroom run {}: {} of {} on {}",
        r.id, r.kind, r.workload, r.device
    )
}

/// The points as table rows; a samples/J column where some point has its energy.
pub(super) fn points_rows(points: &[Point]) -> Vec<Vec<String>> {
    let f = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"));
    let energy = points.iter().any(|p| p.joules_per_sample().is_some());
    points
        .iter()
        .map(|p| {
            let mut row = vec![
                p.batch.to_string(),
                p.status.as_str().to_owned(),
                f(p.samples_per_s),
                f(p.step_ms_p50),
                f(p.step_ms_p95),
                p.peak_bytes
                    .map_or_else(|| "-".to_owned(), headroom_model::budget::format_bytes),
            ];
            if energy {
                row.push(f(p.joules_per_sample().map(|j| 1.0 / j)));
            }
            row
        })
        .collect()
}

/// [`POINT_HEADER`], with samples/J where some point has its energy.
pub(super) fn point_header(points: &[Point]) -> Vec<&'static str> {
    let mut h = POINT_HEADER.to_vec();
    if points.iter().any(|p| p.joules_per_sample().is_some()) {
        h.push("samples/J");
    }
    h
}

pub(super) const POINT_HEADER: [&str; 6] = [
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
        if let Some(e) = &sum.energy {
            let _ = writeln!(s, "\n**Energy**: {}", e.sentence());
        }
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
pub(super) fn tables(
    points: &[Point],
    rec: &Recorded,
) -> Vec<(Vec<&'static str>, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    if !points.is_empty() {
        out.push((point_header(points), points_rows(points)));
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
                        headroom_model::budget::format_bytes(d.bytes),
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
        if let Some(e) = &sum.energy {
            let _ = writeln!(
                s,
                "<p><strong>Energy</strong>: {}</p>",
                escape(&e.sentence())
            );
        }
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
