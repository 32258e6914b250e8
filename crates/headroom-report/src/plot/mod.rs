//! Pictures of Headroom's measurements, drawn with `plotters` as SVG so the app and exported
//! reports show the same thing: a sweep (`sweep`), memory over epochs or time (`memory`), runs
//! side by side (`compare`), and SVG to PNG for the papers (`png`). Here: the palette and the
//! axes' helpers they share.

use headroom_store::CoreError;
use plotters::prelude::*;

mod compare;
mod memory;
mod png;
mod sweep;

pub use compare::{legend_chars, overlay_svg, pair_svg, wrap_label, Figures, Overlay};
pub use memory::{epochs_svg, memory_svg, readings_svg, threshold_line, Series};
pub use png::png_from_svg;
pub use sweep::{sweep_svg, ChartSpec};

pub(super) const BLUE: RGBColor = RGBColor(37, 99, 235);
pub(super) const PURPLE: RGBColor = RGBColor(124, 58, 237);
pub(super) const FAIL: RGBColor = RGBColor(220, 38, 38);
pub(super) const GREEN_MARK: RGBColor = RGBColor(22, 163, 74);
pub(super) const AMBER: RGBColor = RGBColor(217, 119, 6);
pub(super) const GRID: RGBColor = RGBColor(229, 231, 235);
pub(super) const INK: RGBColor = RGBColor(55, 65, 81);

pub(super) fn plot_err(e: impl std::fmt::Display) -> CoreError {
    CoreError::InvalidInput(format!("cannot draw the chart: {e}"))
}

/// Bytes in the unit the chart's memory axis uses, and that unit's name.
pub(super) fn memory_unit(max: u64) -> (f64, &'static str) {
    if max >= 2 << 30 {
        ((1u64 << 30) as f64, "GiB")
    } else {
        ((1u64 << 20) as f64, "MiB")
    }
}

/// The x coordinate of a batch size.
pub(super) fn bx(batch: u32) -> f64 {
    f64::from(batch.max(1)).log2()
}

/// A tick of the log₂ batch axis: the power of two at whole positions, nothing between.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub(super) fn batch_label(x: &f64) -> String {
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
pub(super) fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// One panel of a chart against batch size: its caption, grid, axis names and tick labels, styled
/// alike in the sweep chart and the side-by-side one (ticks at the powers of two, at most 12);
/// `right_top` makes room for a second scale on the right, `0..right_top`.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub(super) fn batch_panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    (lo, hi): (f64, f64),
    y_top: f64,
    y_desc: &str,
    y_fmt: &dyn Fn(&f64) -> String,
    right_top: Option<f64>,
) -> Result<BatchChart<'a, 'b>, CoreError> {
    let label = ("sans-serif", 17).into_font().color(&INK);
    let small = ("sans-serif", 15).into_font().color(&INK);
    // Every power of two over a short span; over a wide one (a sweep whose jump reached 32k)
    // every other, so the labels do not run into each other in a popover-wide chart.
    let span = (hi - lo).round() as usize + 1;
    let ticks = if span > 8 { span.div_ceil(2) } else { span };
    let chart = ChartBuilder::on(area)
        .margin(8)
        .caption(caption, label)
        .x_label_area_size(36)
        .y_label_area_size(58)
        .right_y_label_area_size(if right_top.is_some() { 58 } else { 0 })
        .build_cartesian_2d(lo..hi, 0.0..y_top)
        .map_err(plot_err)?;
    // The second scale (the caller draws its axis when it has one): made before the mesh, which
    // then labels the left side only.
    let mut chart = chart.set_secondary_coord(lo..hi, 0.0..right_top.unwrap_or(1.0));
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

/// A chart of one panel over the log₂ batch axis (`lo..hi`) and `0..y_top`, with a second scale
/// on the right that only a panel with `right_top` labels.
pub(super) type BatchChart<'a, 'b> = plotters::chart::DualCoordChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;
