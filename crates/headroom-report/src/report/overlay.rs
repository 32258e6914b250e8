//! Several runs on one chart: their labels, their figures, the overlay written beside them.

use super::*;

/// How the legend of a side-by-side chart names a run: its id, host and device.
pub fn overlay_label(r: &RunRecord) -> String {
    format!("run {} · {} · {} {}", r.id, r.host, r.device, r.workload)
}

/// A run's headline figures for [`crate::plot::pair_svg`], labelled "run 30 · host · device".
pub fn figures_of(r: &RunRecord) -> crate::plot::Figures {
    let get = |k: &str| {
        r.report
            .as_ref()
            .and_then(|v| v.get(k))
            .and_then(serde_json::Value::as_f64)
    };
    crate::plot::Figures {
        label: format!("run {} · {} · {}", r.id, r.host, r.device),
        samples_per_s: get("samples_per_s"),
        step_ms: get("step_ms_p50"),
        peak_bytes: r.peak_bytes,
    }
}

/// Runs without points (a project's runs here and there) as bars side by side, `width` wide;
/// `None` when none of them measured anything.
pub fn pair_chart_at(runs: &[&RunRecord], width: u32) -> Result<Option<String>, CoreError> {
    let figures: Vec<crate::plot::Figures> = runs.iter().map(|r| figures_of(r)).collect();
    if figures
        .iter()
        .all(|f| f.samples_per_s.is_none() && f.step_ms.is_none() && f.peak_bytes.is_none())
    {
        return Ok(None);
    }
    crate::plot::pair_svg(&figures, width).map(Some)
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
