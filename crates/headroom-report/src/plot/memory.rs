//! Memory over epochs or seconds: one line per series and the dashed line of the growth that
//! would be judged a leak; the epochs run's and a watched process's charts.

use plotters::prelude::*;

use headroom_store::CoreError;

use super::{memory_unit, plot_err, BLUE, FAIL, GREEN_MARK, GRID, INK, PURPLE};

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
