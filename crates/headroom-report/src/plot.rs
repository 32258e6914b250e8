//! Pictures of a sweep, drawn with `plotters` as SVG so the app and exported reports show the same
//! thing: throughput (samples/s) over batch size above, peak memory over batch size below, both on
//! a log₂ batch axis, with the budget, the failed points and the recommendation marked.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use headroom_model::budget::format_bytes;
use headroom_model::protocol::{Point, PointStatus, SweepSummary};
use headroom_store::CoreError;

const BLUE: RGBColor = RGBColor(37, 99, 235);
const PURPLE: RGBColor = RGBColor(124, 58, 237);
const FAIL: RGBColor = RGBColor(220, 38, 38);
const GREEN_MARK: RGBColor = RGBColor(22, 163, 74);
const AMBER: RGBColor = RGBColor(217, 119, 6);
const GRID: RGBColor = RGBColor(229, 231, 235);
const INK: RGBColor = RGBColor(55, 65, 81);

/// What to draw.
#[derive(Debug, Clone, Copy)]
pub struct ChartSpec<'a> {
    pub points: &'a [Point],
    pub summary: Option<&'a SweepSummary>,
    pub budget_bytes: Option<u64>,
    pub width: u32,
    pub height: u32,
}

fn plot_err(e: impl std::fmt::Display) -> CoreError {
    CoreError::InvalidInput(format!("cannot draw the chart: {e}"))
}

/// Bytes in the unit the chart's memory axis uses, and that unit's name.
fn memory_unit(max: u64) -> (f64, &'static str) {
    if max >= 2 << 30 {
        ((1u64 << 30) as f64, "GiB")
    } else {
        ((1u64 << 20) as f64, "MiB")
    }
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
        let mut chart = batch_panel(
            &top,
            "throughput",
            (lo, hi),
            max_sps * 1.15,
            "samples/s",
            &|y| human(*y),
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
        let mut chart = batch_panel(&bottom, "peak memory", (lo, hi), y_max, unit_name, &|y| {
            if unit_name == "MiB" {
                format!("{y:.0}")
            } else {
                format!("{y:.1}")
            }
        })?;
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
/// it failed.
fn hover_label(p: &Point) -> String {
    let mut parts = vec![format!("batch {}", p.batch)];
    if p.status == PointStatus::Ok {
        if let Some(sps) = p.samples_per_s {
            parts.push(format!("{} samples/s", human(sps)));
        }
        if let Some(ms) = p.step_ms_p50 {
            parts.push(format!("{ms:.1} ms/step"));
        }
        if let Some(b) = p.peak_bytes {
            parts.push(format!("peak {}", format_bytes(b)));
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

/// A chart of one panel over the log₂ batch axis (`lo..hi`) and `0..y_top`.
type BatchChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// One panel of a chart against batch size: its caption, grid, axis names and tick labels, styled
/// alike in the sweep chart and the side-by-side one (ticks at the powers of two, at most 12).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn batch_panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    (lo, hi): (f64, f64),
    y_top: f64,
    y_desc: &str,
    y_fmt: &dyn Fn(&f64) -> String,
) -> Result<BatchChart<'a, 'b>, CoreError> {
    let label = ("sans-serif", 17).into_font().color(&INK);
    let small = ("sans-serif", 15).into_font().color(&INK);
    // Every power of two over a short span; over a wide one (a sweep whose jump reached 32k)
    // every other, so the labels do not run into each other in a popover-wide chart.
    let span = (hi - lo).round() as usize + 1;
    let ticks = if span > 8 { span.div_ceil(2) } else { span };
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .caption(caption, label)
        .x_label_area_size(36)
        .y_label_area_size(58)
        .build_cartesian_2d(lo..hi, 0.0..y_top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .x_desc("batch size")
        .y_desc(y_desc)
        .x_labels(ticks)
        .y_labels(6)
        .x_label_formatter(&batch_label)
        .y_label_formatter(y_fmt)
        .label_style(small.clone())
        .axis_desc_style(small)
        .draw()
        .map_err(plot_err)?;
    Ok(chart)
}

/// The x coordinate of a batch size.
fn bx(batch: u32) -> f64 {
    f64::from(batch.max(1)).log2()
}

/// A tick of the log₂ batch axis: the power of two at whole positions, nothing between.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn batch_label(x: &f64) -> String {
    if (x - x.round()).abs() > 0.01 || *x < -0.01 {
        return String::new();
    }
    let v = 2u64.pow(x.round() as u32);
    if v >= 1024 {
        format!("{}k", v / 1024)
    } else {
        v.to_string()
    }
}

/// 1234567 → "1.2M", 2500 → "2.5k".
fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// One memory series over time or epochs.
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    pub name: &'a str,
    /// (x, bytes)
    pub points: &'a [(f64, u64)],
}

/// Memory against epochs (or seconds): one line per series, and a dashed threshold line — the
/// growth that would be judged a leak, drawn from the first value of `threshold_from`.
#[allow(clippy::cast_precision_loss)]
pub fn memory_svg(
    series: &[Series<'_>],
    x_desc: &str,
    threshold: Option<(&[(f64, u64)], &str)>,
    width: u32,
    height: u32,
) -> Result<String, CoreError> {
    const COLOURS: [RGBColor; 3] = [BLUE, PURPLE, GREEN_MARK];
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let all = || series.iter().flat_map(|s| s.points.iter());
        let x_max = all().map(|p| p.0).fold(1.0_f64, f64::max);
        let x_min = all().map(|p| p.0).fold(x_max, f64::min).min(1.0);
        let threshold_pts: Vec<(f64, u64)> = threshold.map(|t| t.0.to_vec()).unwrap_or_default();
        let y_bytes = all()
            .chain(threshold_pts.iter())
            .map(|p| p.1)
            .max()
            .unwrap_or(1 << 20);
        let (unit, unit_name) = memory_unit(y_bytes);
        let y_max = y_bytes as f64 / unit * 1.15;
        let label = ("sans-serif", 17).into_font().color(&INK);
        let small = ("sans-serif", 15).into_font().color(&INK);
        let caption = if x_desc == "epoch" {
            "memory per epoch"
        } else {
            "memory over time"
        };
        // A little room either side so the first and last points are not cut by the frame.
        let pad = (x_max - x_min).max(1.0) * 0.03;
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .caption(caption, label)
            .x_label_area_size(36)
            .y_label_area_size(58)
            .build_cartesian_2d(
                (x_min - pad)..x_max.max(x_min + 1.0) + pad,
                0.0..y_max.max(1.0),
            )
            .map_err(plot_err)?;
        // Epochs are whole numbers: a tick per epoch (at most 12), no 2.5.
        let whole_x = x_desc == "epoch";
        let x_ticks = if whole_x {
            ((x_max - x_min).round() as usize + 1).clamp(2, 12)
        } else {
            8
        };
        let wide = x_max - x_min >= 10.0;
        let x_fmt = move |x: &f64| {
            if !whole_x {
                if wide {
                    format!("{x:.0}")
                } else {
                    format!("{x:.1}")
                }
            } else if (x - x.round()).abs() < 0.01 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(GRID)
            .x_desc(x_desc)
            .x_labels(x_ticks)
            .x_label_formatter(&x_fmt)
            .y_desc(unit_name)
            .y_labels(6)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(small.clone())
            .axis_desc_style(small.clone())
            .draw()
            .map_err(plot_err)?;
        for (i, s) in series.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.1 as f64 / unit)).collect();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(plot_err)?
                .label(s.name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], c.stroke_width(2)));
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(plot_err)?;
        }
        if let Some((_, name)) = threshold.filter(|_| threshold_pts.len() >= 2) {
            let pts: Vec<(f64, f64)> = threshold_pts
                .iter()
                .map(|p| (p.0, p.1 as f64 / unit))
                .collect();
            // Solid: plotters rounds each dash to whole pixels, which makes a sloped dashed
            // line look like stairs.
            chart
                .draw_series(LineSeries::new(pts, FAIL.mix(0.8).stroke_width(1)))
                .map_err(plot_err)?
                .label(name)
                .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], FAIL.stroke_width(1)));
        }
        if series.iter().any(|s| !s.points.is_empty()) {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(GRID)
                .label_font(small)
                .position(SeriesLabelPosition::LowerRight)
                .draw()
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// The threshold line for a judged series: from its first value, the growth that the thresholds
/// call a leak, `leak_growth` per `over` epochs.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
pub fn threshold_line(points: &[(f64, u64)], leak_growth: f64, over: u32) -> Vec<(f64, u64)> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let at = |x: f64| {
        let v = first.1 as f64 * (1.0 + leak_growth * (x - first.0) / f64::from(over.max(1)));
        (x, v.max(0.0) as u64)
    };
    vec![at(first.0), at(last.0)]
}

/// The system's fonts, loaded once, with the generic `sans-serif` the charts ask for pointed at
/// a family that is really there.
fn font_db() -> Result<std::sync::Arc<resvg::usvg::fontdb::Database>, CoreError> {
    static DB: std::sync::OnceLock<std::sync::Arc<resvg::usvg::fontdb::Database>> =
        std::sync::OnceLock::new();
    if let Some(db) = DB.get() {
        return Ok(db.clone());
    }
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_system_fonts();
    let has = |name: &str| {
        db.faces()
            .any(|f| f.families.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
    };
    // macOS first, then what Linux desktops carry.
    let family = [
        "Helvetica",
        "Helvetica Neue",
        "Arial",
        "DejaVu Sans",
        "Liberation Sans",
        "Noto Sans",
        "FreeSans",
    ]
    .into_iter()
    .find(|n| has(n))
    .map(str::to_owned)
    .or_else(|| {
        db.faces()
            .find_map(|f| f.families.first().map(|(n, _)| n.clone()))
    });
    let Some(family) = family else {
        return Err(CoreError::InvalidInput(
            "no font was found to write the chart's labels into a PNG: install one (Debian/Ubuntu: \
             `sudo apt install fonts-dejavu-core`) or export SVG, which needs none"
                .into(),
        ));
    };
    db.set_sans_serif_family(family);
    Ok(DB.get_or_init(|| std::sync::Arc::new(db)).clone())
}

/// A PNG of one of these SVG charts, `scale` times its size in pixels (2 for a sharp picture on
/// a high-density screen), on white.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
pub fn png_from_svg(svg: &str, scale: f32) -> Result<Vec<u8>, CoreError> {
    use resvg::{tiny_skia, usvg};
    let options = usvg::Options {
        fontdb: font_db()?,
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(plot_err)?;
    let size = tree.size();
    let (w, h) = (
        (size.width() * scale).ceil() as u32,
        (size.height() * scale).ceil() as u32,
    );
    let mut pixmap = tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| plot_err(format!("a {w}×{h} picture cannot be made")))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(plot_err)
}

/// Memory per epoch: live tensors, allocator cache and footprint, with the leak threshold drawn
/// from the first value of the measure the verdict judges (live tensors where the device has
/// them, else the footprint).
pub fn epochs_svg(
    samples: &[headroom_model::epochs::EpochSample],
    t: &headroom_model::epochs::EpochThresholds,
    width: u32,
    height: u32,
) -> Result<String, CoreError> {
    let pick =
        |f: &dyn Fn(&headroom_model::epochs::EpochSample) -> Option<u64>| -> Vec<(f64, u64)> {
            samples
                .iter()
                .filter_map(|e| Some((f64::from(e.epoch), f(e)?)))
                .collect()
        };
    let live = pick(&|e| e.live_bytes);
    let cache = pick(&|e| e.cache_bytes);
    let footprint = pick(&|e| e.footprint_bytes);
    let judged = if live.first().is_some_and(|p| p.1 > 0) {
        &live
    } else {
        &footprint
    };
    let line = threshold_line(judged, t.leak_growth, t.over_epochs);
    let series: Vec<Series<'_>> = [
        ("live tensors", &live),
        ("allocator cache", &cache),
        ("footprint", &footprint),
    ]
    .into_iter()
    .filter(|(_, p)| !p.is_empty())
    .map(|(name, points)| Series { name, points })
    .collect();
    memory_svg(
        &series,
        "epoch",
        Some((&line, "leak threshold")),
        width,
        height,
    )
}

/// A watched process tree's memory over seconds, with the growth that would be judged a leak
/// (`leak_growth` over the first reading) as a flat line.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
pub fn readings_svg(
    readings: &[headroom_model::samples::MemoryReading],
    leak_growth: f64,
    width: u32,
    height: u32,
) -> Result<String, CoreError> {
    let tree: Vec<(f64, u64)> = readings.iter().map(|r| (r.t, r.tree_bytes)).collect();
    let limit: Vec<(f64, u64)> = match (tree.first(), tree.last()) {
        (Some(a), Some(b)) => {
            let y = (a.1 as f64 * (1.0 + leak_growth)) as u64;
            vec![(a.0, y), (b.0, y)]
        }
        _ => Vec::new(),
    };
    memory_svg(
        &[Series {
            name: "process tree",
            points: &tree,
        }],
        "seconds",
        Some((&limit, "leak threshold")),
        width,
        height,
    )
}

/// One run drawn beside others.
#[derive(Debug, Clone, Copy)]
pub struct Overlay<'a> {
    /// What the legend calls it: "run 12 · local · cpu".
    pub label: &'a str,
    pub points: &'a [Point],
}

/// Where the overlay legend's text starts, px, and the height of its second line.
const LEGEND_X: i32 = 102;
const LEGEND_LINE: u32 = 18;

/// How many characters of 15 px sans-serif fit between `x` and the right edge of a chart
/// `width` wide: 8.5 px a character, the width of a wide lowercase letter and of digits, so
/// a line of them stays inside.
pub fn legend_chars(width: u32, x: i32) -> usize {
    let room = i64::from(width) - i64::from(x) - 8;
    usize::try_from(room * 2 / 17).unwrap_or(0).max(12)
}

/// `label` in lines of at most `per_line` characters, broken at spaces where it can be; past
/// `max_lines` the last line ends in "…".
pub fn wrap_label(label: &str, per_line: usize, max_lines: usize) -> Vec<String> {
    let per_line = per_line.max(2);
    let mut lines: Vec<String> = Vec::new();
    let mut rest: Vec<char> = label.chars().collect();
    while !rest.is_empty() {
        if lines.len() + 1 == max_lines.max(1) && rest.len() > per_line {
            let mut last: String = rest[..per_line - 1].iter().collect();
            last.truncate(last.trim_end().len());
            last.push('…');
            lines.push(last);
            return lines;
        }
        if rest.len() <= per_line {
            lines.push(rest.iter().collect());
            break;
        }
        // Break at the last space that leaves something on this line, else mid-word.
        let cut = rest[..=per_line]
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&i| i > 0)
            .unwrap_or(per_line);
        lines.push(rest[..cut].iter().collect::<String>().trim_end().to_owned());
        rest.drain(..cut);
        while rest.first() == Some(&' ') {
            rest.remove(0);
        }
    }
    lines
}

const OVERLAY_COLOURS: [RGBColor; 4] = [BLUE, RGBColor(234, 88, 12), GREEN_MARK, PURPLE];

/// Runs side by side (one against another, local against remote): throughput over batch above,
/// peak memory over batch below, one colour per run, the same log₂ batch axis for all. Failed
/// points are left out of the lines and marked with a cross in the run's colour on the axis.
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
pub fn overlay_svg(runs: &[Overlay<'_>], width: u32, height: u32) -> Result<String, CoreError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let all = || runs.iter().flat_map(|r| r.points.iter());
        let (lo, hi) = all()
            .map(|p| bx(p.batch))
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        let (lo, hi) = if lo > hi {
            (0.0, 4.0)
        } else {
            (lo.floor() - 0.4, hi.ceil() + 0.4)
        };
        let small = ("sans-serif", 15).into_font().color(&INK);
        // The legend gets its own strip above the charts, so it never covers a line; a label
        // too long for the width (a project's command) takes a second line, then is cut.
        let per_line = legend_chars(width, LEGEND_X);
        let labels: Vec<Vec<String>> = runs
            .iter()
            .map(|r| wrap_label(r.label, per_line, 2))
            .collect();
        let extra: usize = labels.iter().map(|l| l.len().saturating_sub(1)).sum();
        let strip = 12
            + 22 * u32::try_from(runs.len()).unwrap_or(4)
            + LEGEND_LINE * u32::try_from(extra).unwrap_or(4);
        let (legend, charts) = root.split_vertically(strip);
        let mut y = 14;
        for (i, lines) in labels.iter().enumerate() {
            let c = OVERLAY_COLOURS[i % OVERLAY_COLOURS.len()];
            legend
                .draw(&PathElement::new(
                    [(LEGEND_X - 32, y), (LEGEND_X - 8, y)],
                    c.stroke_width(3),
                ))
                .map_err(plot_err)?;
            for (k, line) in lines.iter().enumerate() {
                legend
                    .draw(&Text::new(
                        line.clone(),
                        (
                            LEGEND_X,
                            y + i32::try_from(LEGEND_LINE * u32::try_from(k).unwrap_or(1))
                                .unwrap_or(0),
                        ),
                        small.clone().pos(Pos::new(HPos::Left, VPos::Center)),
                    ))
                    .map_err(plot_err)?;
            }
            y += 22
                + i32::try_from(LEGEND_LINE * u32::try_from(lines.len() - 1).unwrap_or(0))
                    .unwrap_or(0);
        }
        let (top, bottom) = charts.split_vertically((height - strip) / 2);
        let max_sps = all()
            .filter_map(|p| p.samples_per_s)
            .fold(0.0_f64, f64::max)
            .max(1.0);
        let max_peak = all().filter_map(|p| p.peak_bytes).max().unwrap_or(1 << 30);
        let (unit, unit_name) = memory_unit(max_peak);
        type Pick = fn(&Point, f64) -> Option<f64>;
        let panels: [(&DrawingArea<SVGBackend<'_>, _>, &str, &str, f64, Pick); 2] = [
            (&top, "throughput", "samples/s", max_sps, |p, _| {
                p.samples_per_s
            }),
            (
                &bottom,
                "peak memory",
                unit_name,
                max_peak as f64 / unit,
                |p, unit| p.peak_bytes.map(|b| b as f64 / unit),
            ),
        ];
        for (area, caption, y_desc, y_top, pick) in panels {
            let mut chart = batch_panel(area, caption, (lo, hi), y_top * 1.15, y_desc, &|y| {
                if y_top < 10.0 {
                    format!("{y:.1}")
                } else {
                    human(*y)
                }
            })?;
            for (i, r) in runs.iter().enumerate() {
                let c = OVERLAY_COLOURS[i % OVERLAY_COLOURS.len()];
                let pts: Vec<(f64, f64)> = r
                    .points
                    .iter()
                    .filter(|p| p.status == PointStatus::Ok)
                    .filter_map(|p| Some((bx(p.batch), pick(p, unit)?)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                    .map_err(plot_err)?;
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(plot_err)?;
                chart
                    .draw_series(
                        r.points
                            .iter()
                            .filter(|p| p.status != PointStatus::Ok)
                            .map(|p| Cross::new((bx(p.batch), 0.0), 5, c.stroke_width(2))),
                    )
                    .map_err(plot_err)?;
            }
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// One run's headline figures, for [`pair_svg`].
#[derive(Debug, Clone)]
pub struct Figures {
    /// What the legend calls it: "run 30 · here (vm) · cpu".
    pub label: String,
    pub samples_per_s: Option<f64>,
    pub step_ms: Option<f64>,
    pub peak_bytes: Option<u64>,
}

/// Two or more runs without points (a project's `headroom run`s, here and on a remote host)
/// side by side: a row of bars each for throughput, step time and peak memory, one colour per
/// run as in [`overlay_svg`], each bar's figure written at its end. A figure a run lacks is
/// "not measured" in its row.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::too_many_lines
)]
pub fn pair_svg(runs: &[Figures], width: u32) -> Result<String, CoreError> {
    type Pick = fn(&Figures) -> Option<f64>;
    type Say = fn(f64) -> String;
    let rows: [(&str, Pick, Say); 3] = [
        (
            "throughput (higher is better)",
            |f| f.samples_per_s,
            |v| format!("{} samples/s", human(v)),
        ),
        (
            "step time (lower is better)",
            |f| f.step_ms,
            |v| format!("{v:.1} ms"),
        ),
        (
            "peak memory",
            |f| f.peak_bytes.map(|b| b as f64),
            |v| format_bytes(v as u64),
        ),
    ];
    let n = i32::try_from(runs.len()).unwrap_or(4);
    let legend_h = 10 + 20 * n;
    let row_h = 26 + 20 * n;
    let height = u32::try_from(legend_h + 3 * row_h + 6).unwrap_or(400);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let small = ("sans-serif", 13).into_font().color(&INK);
        let caption = ("sans-serif", 14).into_font().color(&INK);
        let left = 12;
        let right = i32::try_from(width).unwrap_or(360) - 12;
        for (i, r) in runs.iter().enumerate() {
            let c = OVERLAY_COLOURS[i % OVERLAY_COLOURS.len()];
            let y = 12 + 20 * i32::try_from(i).unwrap_or(0);
            root.draw(&Rectangle::new(
                [(left, y - 5), (left + 18, y + 5)],
                c.filled(),
            ))
            .map_err(plot_err)?;
            root.draw(&Text::new(
                r.label.clone(),
                (left + 26, y),
                small.clone().pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(plot_err)?;
        }
        for (k, (title, pick, say)) in rows.iter().enumerate() {
            let top = legend_h + row_h * i32::try_from(k).unwrap_or(0);
            root.draw(&PathElement::new(
                [(left, top + 2), (right, top + 2)],
                GRID.stroke_width(1),
            ))
            .map_err(plot_err)?;
            root.draw(&Text::new(
                (*title).to_owned(),
                (left, top + 14),
                caption.clone().pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(plot_err)?;
            let max = runs.iter().filter_map(pick).fold(0.0_f64, f64::max);
            // The bars take what the longest figure's text leaves.
            let span = f64::from((right - left - 110).max(40));
            for (i, r) in runs.iter().enumerate() {
                let c = OVERLAY_COLOURS[i % OVERLAY_COLOURS.len()];
                let y = top + 34 + 20 * i32::try_from(i).unwrap_or(0);
                match pick(r) {
                    Some(v) if max > 0.0 => {
                        let w = ((v / max) * span).round().max(2.0) as i32;
                        root.draw(&Rectangle::new(
                            [(left, y - 7), (left + w, y + 7)],
                            c.filled(),
                        ))
                        .map_err(plot_err)?;
                        root.draw(&Text::new(
                            say(v),
                            (left + w + 6, y),
                            small.clone().pos(Pos::new(HPos::Left, VPos::Center)),
                        ))
                        .map_err(plot_err)?;
                    }
                    _ => {
                        root.draw(&Text::new(
                            "not measured".to_owned(),
                            (left, y),
                            small.clone().pos(Pos::new(HPos::Left, VPos::Center)),
                        ))
                        .map_err(plot_err)?;
                    }
                }
            }
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}
