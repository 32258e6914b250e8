//! Runs side by side: several sweeps' curves overlaid with a wrapped legend, and two runs'
//! headline figures as paired bars.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use headroom_model::budget::format_bytes;
use headroom_model::protocol::{Point, PointStatus};
use headroom_store::CoreError;

use super::{batch_panel, bx, human, memory_unit, plot_err, BLUE, GREEN_MARK, GRID, INK, PURPLE};

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
            let mut chart = batch_panel(
                area,
                caption,
                (lo, hi),
                y_top * 1.15,
                y_desc,
                &|y| {
                    if y_top < 10.0 {
                        format!("{y:.1}")
                    } else {
                        human(*y)
                    }
                },
                None,
            )?;
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
