//! A sweep's chart: throughput (samples/s) over batch size above, peak memory over batch size
//! below, both on a log₂ batch axis, with the budget, the failed points and the recommendation
//! marked, and a hover label on every point.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use headroom_model::budget::format_bytes;
use headroom_model::protocol::{Point, PointStatus, SweepSummary};
use headroom_store::CoreError;

use super::{
    batch_panel, bx, human, memory_unit, plot_err, AMBER, BLUE, FAIL, GREEN_MARK, INK, PURPLE,
};

/// What to draw.
#[derive(Debug, Clone, Copy)]
pub struct ChartSpec<'a> {
    pub points: &'a [Point],
    pub summary: Option<&'a SweepSummary>,
    pub budget_bytes: Option<u64>,
    pub width: u32,
    pub height: u32,
}

/// The sweep chart as an SVG document; with no points, an empty frame that says so.
#[allow(clippy::cast_precision_loss)]
pub fn sweep_svg(spec: &ChartSpec<'_>) -> Result<String, CoreError> {
    let mut svg = String::new();
    // Where each point was drawn, with what it measured: kept in the SVG as invisible circles
    // (`data-label`) that the app's chart reads to answer a hover.
    let mut hover: Vec<(i32, i32, String)> = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (spec.width, spec.height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        // The batch axis is log₂: x = log₂(batch), labelled at whole powers of two.
        let batches: Vec<f64> = spec.points.iter().map(|p| bx(p.batch)).collect();
        let (lo, hi) = batches
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let (lo, hi) = if batches.is_empty() {
            (0.0, 4.0)
        } else {
            (lo.floor() - 0.4, hi.ceil() + 0.4)
        };
        let (top, bottom) = root.split_vertically(spec.height / 2);
        // plotters writes SVG font sizes at 0.8× the size asked: 17 and 15 come out near 13.5 and 12 px.
        let small = ("sans-serif", 15).into_font().color(&INK);

        // Throughput.
        let ok: Vec<(f64, f64)> = spec
            .points
            .iter()
            .filter_map(|p| Some((bx(p.batch), p.samples_per_s?)))
            .collect();
        let max_sps = ok.iter().map(|x| x.1).fold(0.0_f64, f64::max).max(1.0);
        // Samples per joule where the points carry their energy, on a scale of its own at the
        // right: the most efficient batch is not always the fastest.
        let per_joule: Vec<(f64, f64)> = spec
            .points
            .iter()
            .filter(|p| p.status == PointStatus::Ok)
            .filter_map(|p| {
                let j = p.joules_per_sample().filter(|j| *j > 0.0)?;
                Some((bx(p.batch), 1.0 / j))
            })
            .collect();
        let top_j = (!per_joule.is_empty())
            .then(|| per_joule.iter().map(|x| x.1).fold(0.0_f64, f64::max) * 1.15);
        let mut chart = batch_panel(
            &top,
            "throughput",
            (lo, hi),
            max_sps * 1.15,
            "samples/s",
            &|y| human(*y),
            top_j,
        )?;
        chart
            .draw_series(LineSeries::new(ok.iter().copied(), BLUE.stroke_width(2)))
            .map_err(plot_err)?;
        chart
            .draw_series(
                ok.iter()
                    .map(|&(x, y)| Circle::new((x, y), 3, BLUE.filled())),
            )
            .map_err(plot_err)?;
        for p in spec.points {
            if let Some(sps) = p.samples_per_s {
                let (cx, cy) = chart.backend_coord(&(bx(p.batch), sps));
                hover.push((cx, cy, hover_label(p)));
            }
        }
        // Each point's 95 % interval as a bar; a point to read with care ringed in amber.
        let measured = spec
            .points
            .iter()
            .filter_map(|p| Some((p, bx(p.batch), p.samples_per_s?)));
        for (p, x, y) in measured {
            if let Some(ci) = p.ci_share().filter(|c| *c > 0.0) {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        [(x, y * (1.0 - ci)), (x, y * (1.0 + ci))],
                        BLUE.mix(0.6).stroke_width(1),
                    )))
                    .map_err(plot_err)?;
            }
            if !p.cautions().is_empty() {
                chart
                    .draw_series(std::iter::once(Circle::new(
                        (x, y),
                        5,
                        AMBER.stroke_width(2),
                    )))
                    .map_err(plot_err)?;
            }
        }
        let cautioned: Vec<String> = spec
            .points
            .iter()
            .filter(|p| !p.cautions().is_empty())
            .map(|p| p.batch.to_string())
            .collect();
        if !cautioned.is_empty() {
            let list = if cautioned.len() > 4 {
                format!(
                    "{} and {} more",
                    cautioned[..3].join(", "),
                    cautioned.len() - 3
                )
            } else {
                cautioned.join(", ")
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("○ read with care: batch {list}"),
                    (lo + 0.1, max_sps * 1.12),
                    small
                        .clone()
                        .color(&AMBER)
                        .pos(Pos::new(HPos::Left, VPos::Top)),
                )))
                .map_err(plot_err)?;
        }
        if let Some(rb) = spec.summary.and_then(|s| s.recommended_batch) {
            let x = bx(rb);
            if let Some(&(_, y)) = ok.iter().find(|(b, _)| (*b - x).abs() < 0.5) {
                chart
                    .draw_series(std::iter::once(Circle::new(
                        (x, y),
                        7,
                        GREEN_MARK.stroke_width(2),
                    )))
                    .map_err(plot_err)?;
                // Right of the mark in the left half of the axis, left of it in the right half.
                let right_half = x > (lo + hi) / 2.0;
                let (anchor, nudge) = if right_half {
                    (HPos::Right, -0.15)
                } else {
                    (HPos::Left, 0.15)
                };
                chart
                    .draw_series(std::iter::once(Text::new(
                        // The top of a rising curve is the best so far, not a knee.
                        if spec.summary.is_some_and(|s| s.still_rising) {
                            format!("still rising at {rb}")
                        } else {
                            format!("recommended {rb}")
                        },
                        (x + nudge, y * 0.86),
                        small
                            .clone()
                            .color(&GREEN_MARK)
                            .pos(Pos::new(anchor, VPos::Top)),
                    )))
                    .map_err(plot_err)?;
            }
        }
        if spec.points.is_empty() {
            chart
                .draw_series(std::iter::once(Text::new(
                    "waiting for the first point…",
                    (lo + 0.3, max_sps * 0.6),
                    small.clone(),
                )))
                .map_err(plot_err)?;
        }

        if let Some(top_j) = top_j {
            chart
                .configure_secondary_axes()
                .y_desc("samples/J (green, dashed)")
                .y_labels(6)
                .y_label_formatter(&|y| {
                    if top_j < 10.0 {
                        format!("{y:.2}")
                    } else {
                        human(*y)
                    }
                })
                .label_style(small.clone().color(&GREEN_MARK))
                .axis_desc_style(small.clone().color(&GREEN_MARK))
                .draw()
                .map_err(plot_err)?;
            chart
                .draw_secondary_series(DashedLineSeries::new(
                    per_joule.iter().copied(),
                    6,
                    4,
                    GREEN_MARK.stroke_width(2),
                ))
                .map_err(plot_err)?;
            chart
                .draw_secondary_series(
                    per_joule
                        .iter()
                        .map(|&(x, y)| TriangleMarker::new((x, y), 4, GREEN_MARK.filled())),
                )
                .map_err(plot_err)?;
        }

        // Memory.
        let peaks: Vec<(f64, u64)> = spec
            .points
            .iter()
            .filter_map(|p| Some((bx(p.batch), p.peak_bytes?)))
            .collect();
        // The axis fits the points; the budget joins it only when it is near them, else it is
        // named at the top so small peaks under a large budget stay readable.
        let max_peak = peaks.iter().map(|x| x.1).max();
        let budget_on_scale = match (spec.budget_bytes, max_peak) {
            (Some(b), Some(p)) => b <= p.saturating_mul(2),
            (Some(_), None) => true,
            (None, _) => false,
        };
        let max_bytes = max_peak
            .into_iter()
            .chain(spec.budget_bytes.filter(|_| budget_on_scale))
            .max()
            .unwrap_or(1 << 30);
        let (unit, unit_name) = memory_unit(max_bytes);
        let y_max = max_bytes as f64 / unit * 1.15;
        let mut chart = batch_panel(
            &bottom,
            "peak memory",
            (lo, hi),
            y_max,
            unit_name,
            &|y| {
                if unit_name == "MiB" {
                    format!("{y:.0}")
                } else {
                    format!("{y:.1}")
                }
            },
            top_j,
        )?;
        if let Some(b) = spec.budget_bytes.filter(|_| !budget_on_scale) {
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("budget {} (above this scale)", format_bytes(b)),
                    (lo + 0.1, y_max * 0.97),
                    small.clone().color(&FAIL),
                )))
                .map_err(plot_err)?;
        }
        if let Some(b) = spec.budget_bytes.filter(|_| budget_on_scale) {
            let y = b as f64 / unit;
            chart
                .draw_series(DashedLineSeries::new(
                    [(lo, y), (hi, y)],
                    6,
                    4,
                    FAIL.stroke_width(1),
                ))
                .map_err(plot_err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("budget {}", format_bytes(b)),
                    (lo + 0.1, y + y_max * 0.09),
                    small.clone().color(&FAIL),
                )))
                .map_err(plot_err)?;
        }
        let ok_peaks: Vec<(f64, f64, &Point)> = spec
            .points
            .iter()
            .filter(|p| p.status == PointStatus::Ok)
            .filter_map(|p| Some((bx(p.batch), p.peak_bytes? as f64 / unit, p)))
            .collect();
        chart
            .draw_series(LineSeries::new(
                ok_peaks.iter().map(|&(x, y, _)| (x, y)),
                PURPLE.stroke_width(2),
            ))
            .map_err(plot_err)?;
        chart
            .draw_series(
                ok_peaks
                    .iter()
                    .map(|&(x, y, _)| Circle::new((x, y), 3, PURPLE.filled())),
            )
            .map_err(plot_err)?;
        // Points that did not fit: a red cross at their peak (or on the axis when unknown),
        // labelled with how they failed.
        let failed: Vec<(f64, f64, &Point)> = spec
            .points
            .iter()
            .filter(|p| p.status != PointStatus::Ok)
            .map(|p| {
                let y = p
                    .peak_bytes
                    .or(p.predicted_peak_bytes)
                    .map_or(0.0, |b| b as f64 / unit);
                (bx(p.batch), y.min(y_max * 0.97), p)
            })
            .collect();
        chart
            .draw_series(
                failed
                    .iter()
                    .map(|(x, y, _)| Cross::new((*x, *y), 5, FAIL.stroke_width(2))),
            )
            .map_err(plot_err)?;
        chart
            .draw_series(failed.iter().map(|(x, y, p)| {
                Text::new(
                    p.status.as_str().replace('_', " "),
                    (x - 0.35, y - y_max * 0.06),
                    small.clone().color(&FAIL),
                )
            }))
            .map_err(plot_err)?;
        // Hover targets where the memory panel drew each point: its dot, or its cross.
        for &(x, y, p) in ok_peaks.iter().chain(&failed) {
            let (cx, cy) = chart.backend_coord(&(x, y));
            hover.push((cx, cy, hover_label(p)));
        }
        root.present().map_err(plot_err)?;
    }
    Ok(with_hover(svg, &hover))
}

/// What a hover on a point says: its batch, samples/s, median step time and peak memory, or how
/// it failed — full values, as the table has them (sentences round to three digits).
fn hover_label(p: &Point) -> String {
    let mut parts = vec![format!("batch {}", p.batch)];
    if p.status == PointStatus::Ok {
        if let Some(sps) = p.samples_per_s {
            parts.push(format!("{sps:.1} samples/s"));
        }
        if let Some(ms) = p.step_ms_p50 {
            parts.push(format!("{ms:.2} ms/step"));
        }
        if let Some(b) = p.peak_bytes {
            parts.push(format!("peak {}", format_bytes(b)));
        }
        if let Some(j) = p.joules_per_sample().filter(|j| *j > 0.0) {
            parts.push(format!("{:.2} samples/J", 1.0 / j));
        }
    } else {
        parts.push(p.status.as_str().replace('_', " "));
        if let Some(b) = p.peak_bytes.or(p.predicted_peak_bytes) {
            parts.push(format!("needs about {}", format_bytes(b)));
        }
    }
    parts.join(" · ")
}

/// Appends the hover targets to an SVG document: invisible circles (no fill, no stroke) a
/// picture viewer ignores.
fn with_hover(svg: String, targets: &[(i32, i32, String)]) -> String {
    let Some(end) = svg.rfind("</svg>") else {
        return svg;
    };
    let mut out = String::with_capacity(svg.len() + targets.len() * 96);
    out.push_str(&svg[..end]);
    out.push_str("<g data-hover=\"points\" fill=\"none\" stroke=\"none\">\n");
    for (x, y, label) in targets {
        let label = label
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;");
        out.push_str(&format!(
            "<circle cx=\"{x}\" cy=\"{y}\" r=\"10\" data-label=\"{label}\"/>\n"
        ));
    }
    out.push_str("</g>\n");
    out.push_str(&svg[end..]);
    out
}
