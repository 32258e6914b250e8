//! The sweep chart: an SVG with both panels, axis names and units, the budget, the failed point
//! and the recommendation; and a frame that says it waits when there are no points yet.

use headroom_model::planner::Limit;
use headroom_model::protocol::{Point, PointStatus};
use headroom_model::summary::summarize;
use headroom_report::plot::{sweep_svg, ChartSpec};

use crate::ledger::ok_point;

#[test]
fn the_chart_has_both_panels_axes_units_budget_and_the_recommendation() {
    let mut points: Vec<Point> = [
        (1, 900.0),
        (2, 1700.0),
        (4, 3000.0),
        (8, 3150.0),
        (16, 3200.0),
    ]
    .iter()
    .map(|&(b, s)| ok_point(b, s, u64::from(b) * (300 << 20)))
    .collect();
    let mut oom = Point::failed(32, PointStatus::Oom, "CUDA out of memory");
    oom.predicted_peak_bytes = Some(9 << 30);
    points.push(oom);
    let budget = 6u64 << 30;
    let summary = summarize(&points, Limit::Oom, budget);
    let svg = sweep_svg(&ChartSpec {
        points: &points,
        summary: Some(&summary),
        budget_bytes: Some(budget),
        width: 360,
        height: 420,
    })
    .expect("svg");
    assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
    for want in [
        "throughput",
        "peak memory",
        "samples/s",
        "batch size",
        "GiB",
        "budget 6.0 GiB",
        &format!(
            "recommended {}",
            summary.recommended_batch.expect("a recommendation")
        ),
    ] {
        assert!(svg.contains(want), "{want:?} missing from the chart");
    }
    // Five measured points on each panel, one failed cross.
    assert!(svg.matches("<circle").count() >= 10, "points are drawn");
    if let Ok(dir) = std::env::var("HEADROOM_PLOT_OUT") {
        std::fs::write(std::path::Path::new(&dir).join("sweep_chart.svg"), &svg).expect("write");
    }
}

/// The attribute `name="…"` of an SVG element's text.
fn attr<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = element[start..].find('"')?;
    Some(&element[start..start + len])
}

#[test]
fn each_point_carries_a_hover_target_where_it_is_drawn_saying_what_it_measured() {
    let mut points: Vec<Point> = [(1, 900.0), (4, 3000.0), (16, 3200.0)]
        .iter()
        .map(|&(b, s)| {
            let mut p = ok_point(b, s, u64::from(b) * (300 << 20));
            p.step_ms_p50 = Some(f64::from(b) / s * 1000.0);
            p
        })
        .collect();
    let mut oom = Point::failed(32, PointStatus::Oom, "CUDA out of memory");
    oom.predicted_peak_bytes = Some(9 << 30);
    points.push(oom);
    let svg = sweep_svg(&ChartSpec {
        points: &points,
        summary: None,
        budget_bytes: None,
        width: 360,
        height: 420,
    })
    .expect("svg");
    let circles: Vec<&str> = svg.split("<circle").skip(1).collect();
    let drawn: Vec<(&str, &str)> = circles
        .iter()
        .filter(|c| attr(c, "r") == Some("3"))
        .filter_map(|c| Some((attr(c, "cx")?, attr(c, "cy")?)))
        .collect();
    let targets: Vec<(&str, &str, &str)> = circles
        .iter()
        .filter_map(|c| Some((attr(c, "cx")?, attr(c, "cy")?, attr(c, "data-label")?)))
        .collect();
    // Three on the throughput panel, three plus the failed one on the memory panel.
    assert_eq!(targets.len(), 7, "{targets:?}");
    for (x, y, label) in &targets {
        if label.contains("oom") {
            continue;
        }
        assert!(
            drawn.contains(&(*x, *y)),
            "{label} at {x},{y} is not where a point is drawn: {drawn:?}"
        );
    }
    let batch4: Vec<&&str> = targets
        .iter()
        .map(|(_, _, l)| l)
        .filter(|l| l.starts_with("batch 4 "))
        .collect();
    assert_eq!(batch4.len(), 2, "one on each panel");
    assert_eq!(
        *batch4[0],
        "batch 4 · 3000.0 samples/s · 1.33 ms/step · peak 1.2 GiB"
    );
    assert!(
        targets
            .iter()
            .any(|(_, _, l)| *l == "batch 32 · oom · needs about 9.0 GiB"),
        "{targets:?}"
    );
    // Invisible: the group neither fills nor strokes.
    assert!(svg.contains(r#"<g data-hover="points" fill="none" stroke="none">"#));
    // The UI's hover reads this very chart (ui/tests/chart-hover.svg; HEADROOM_BLESS=1 rewrites it).
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/tests/chart-hover.svg");
    if std::env::var_os("HEADROOM_BLESS").is_some() {
        std::fs::write(&fixture, &svg).expect("write the UI's fixture");
    }
    assert_eq!(
        std::fs::read_to_string(&fixture).expect("ui/tests/chart-hover.svg"),
        svg,
        "the UI's chart fixture is stale: rerun with HEADROOM_BLESS=1"
    );
}

#[test]
fn no_points_yet_is_an_empty_frame_that_says_so() {
    let svg = sweep_svg(&ChartSpec {
        points: &[],
        summary: None,
        budget_bytes: None,
        width: 360,
        height: 420,
    })
    .expect("svg");
    assert!(svg.contains("waiting for the first point"));
    assert!(svg.contains("samples/s"));
}

#[test]
fn a_budget_far_above_the_peaks_is_named_not_drawn_to_scale() {
    let points: Vec<Point> = [1, 2, 4]
        .iter()
        .map(|&b| ok_point(b, 100.0 * f64::from(b), u64::from(b) << 20))
        .collect();
    let svg = sweep_svg(&ChartSpec {
        points: &points,
        summary: None,
        budget_bytes: Some(20 << 30),
        width: 360,
        height: 420,
    })
    .expect("svg");
    assert!(svg.contains("budget 20.0 GiB (above this scale)"));
    assert!(svg.contains("MiB"), "small peaks get a MiB axis");
}

#[test]
fn the_memory_chart_draws_each_series_and_the_threshold() {
    use headroom_report::plot::{memory_svg, threshold_line, Series};
    let footprint: Vec<(f64, u64)> = (1..=6)
        .map(|e: u32| (f64::from(e), u64::from(400 + 48 * e) << 20))
        .collect();
    let line = threshold_line(&footprint, 0.26, 10);
    assert_eq!(line.len(), 2);
    // 26 % over 10 epochs from epoch 1: +13 % by epoch 6.
    let expect = (f64::from(448u32 << 20) * (1.0 + 0.26 * 5.0 / 10.0)) as u64;
    assert!(line[1].1.abs_diff(expect) < 1 << 20, "{line:?}");
    let svg = memory_svg(
        &[Series {
            name: "footprint",
            points: &footprint,
        }],
        "epoch",
        Some((&line, "leak threshold")),
        360,
        300,
    )
    .expect("svg");
    for want in ["memory", "epoch", "MiB", "footprint", "leak threshold"] {
        assert!(svg.contains(want), "{want:?} missing");
    }
    assert!(memory_svg(&[], "seconds", None, 360, 300).is_ok());
}

/// A sweep whose jump reached 24815 spans 16 to 32k: every other power of two is labelled, the
/// large ones as `k`, so the labels of a popover-wide chart do not run together; a curve still
/// rising at its top is marked so, not as a recommendation.
#[test]
fn a_wide_batch_axis_is_labelled_sparsely_and_a_rising_top_says_so() {
    let mut points: Vec<Point> = [(16, 2000.0), (64, 9000.0), (256, 11000.0)]
        .iter()
        .map(|&(b, s)| ok_point(b, s, u64::from(b) * (1 << 20)))
        .collect();
    points.push(Point::failed(24815, PointStatus::Oom, "not enough memory"));
    let summary = summarize(&points, Limit::Oom, 20 << 30);
    let svg = sweep_svg(&ChartSpec {
        points: &points,
        summary: Some(&summary),
        budget_bytes: Some(20 << 30),
        width: 360,
        height: 420,
    })
    .expect("svg");
    let labels: Vec<&str> = [
        "16", "32", "64", "128", "256", "512", "1k", "2k", "4k", "8k", "16k", "32k",
    ]
    .into_iter()
    .filter(|l| svg.contains(&format!(">\n{l}\n<")))
    .collect();
    assert!(labels.len() <= 7, "every other power: {labels:?}");
    assert!(labels.iter().any(|l| l.ends_with('k')), "{labels:?}");
    assert!(!svg.contains(">\n32768\n<") && !svg.contains(">\n16384\n<"));
    assert!(summary.still_rising, "{}", summary.reason);
    assert!(
        svg.contains("still rising at 256"),
        "the top of a rising curve is marked as such"
    );
}

/// Each point's interval is a bar, and the points to read with care (timed beside other work,
/// noisy at the cap) are ringed in amber and named on the chart itself.
#[test]
fn points_to_read_with_care_are_marked_on_the_chart() {
    let mut points: Vec<Point> = [(1, 900.0), (2, 1700.0), (4, 3000.0)]
        .iter()
        .map(|&(b, s)| ok_point(b, s, u64::from(b) * (300 << 20)))
        .collect();
    let draw = |points: &[Point]| {
        sweep_svg(&ChartSpec {
            points,
            summary: None,
            budget_bytes: None,
            width: 360,
            height: 420,
        })
        .expect("svg")
    };
    let quiet = draw(&points);
    assert!(
        !quiet.contains("measured beside other work"),
        "nothing to say"
    );
    // Batch 2 noisy (±20 %), batch 4 beside a busy neighbour.
    points[1].step_cv = Some(0.51);
    points[1].timed_steps = 25;
    points[2].load = Some(headroom_probe::load::PointLoad {
        other_cores: 1.3,
        busiest: Some("zoom.us".into()),
        busiest_cores: 1.2,
        seconds: 0.3,
        pressure: None,
        pressure_detail: None,
        swap_growth_bytes: None,
        accel_others: Vec::new(),
    });
    let marked = draw(&points);
    assert!(
        marked.contains("○ read with care: batch 2, 4"),
        "the chart names them"
    );
    // Two amber rings more than the quiet chart, and an interval bar per point with a spread.
    assert_eq!(
        marked.matches("<circle").count(),
        quiet.matches("<circle").count() + 2
    );
    assert!(marked.matches("<polyline").count() > quiet.matches("<polyline").count());
    if let Ok(dir) = std::env::var("HEADROOM_PLOT_OUT") {
        let dir = std::path::Path::new(&dir);
        std::fs::write(dir.join("sweep_chart_cautions.svg"), &marked).expect("write");
        let png = headroom_report::plot::png_from_svg(&marked, 2.0).expect("png");
        std::fs::write(dir.join("sweep_chart_cautions.png"), png).expect("write");
    }
}

/// The widths of the bars drawn in `fill` (an SVG `fill="#RRGGBB"`), in drawing order.
fn bar_widths(svg: &str, fill: &str) -> Vec<f64> {
    svg.split("<rect")
        .skip(1)
        .filter(|r| r.contains(&format!("fill=\"{fill}\"")))
        .filter_map(|r| {
            let w = r.split("width=\"").nth(1)?.split('"').next()?;
            w.parse().ok()
        })
        .collect()
}

#[test]
fn two_runs_without_points_are_drawn_as_bars_in_proportion_with_their_figures() {
    use headroom_report::plot::{pair_svg, Figures};
    let here = Figures {
        label: "run 30 · vm · process".into(),
        samples_per_s: Some(15_284.8),
        step_ms: Some(2.6),
        peak_bytes: Some(664 << 20),
    };
    let there = Figures {
        label: "run 31 · fresh · cpu".into(),
        samples_per_s: Some(9_277.0),
        step_ms: Some(4.2),
        peak_bytes: None,
    };
    let svg = pair_svg(&[here, there], 360).expect("svg");
    for want in [
        "run 30 · vm · process",
        "run 31 · fresh · cpu",
        "throughput (higher is better)",
        "15.3k samples/s",
        "9.3k samples/s",
        "2.6 ms",
        "4.2 ms",
        "664 MiB",
        "not measured",
    ] {
        assert!(svg.contains(want), "{want} missing");
    }
    // Blue is the first run, orange the second: a legend swatch, then one bar per figure.
    let blue = bar_widths(&svg, "#2563EB");
    let orange = bar_widths(&svg, "#EA580C");
    assert_eq!((blue.len(), orange.len()), (4, 3), "{blue:?} {orange:?}");
    let (b_sps, o_sps) = (blue[1], orange[1]);
    assert!(
        ((o_sps / b_sps) - 9_277.0 / 15_284.8).abs() < 0.02,
        "{o_sps} / {b_sps}"
    );
    // The longer step time has the longer bar.
    assert!(orange[2] > blue[2], "{blue:?} {orange:?}");
}

#[test]
fn a_long_legend_label_wraps_onto_a_second_line_then_is_cut_inside_the_width() {
    use headroom_report::plot::{legend_chars, overlay_svg, wrap_label, Overlay};
    let short = "run 12 · fresh · cpu mlp";
    assert_eq!(wrap_label(short, 30, 2), vec![short.to_owned()]);
    let long = "run 41 · fresh · cpu python train.py --epochs 2 --lr 0.1 --data /home/u/data/imagenet-subset-with-a-long-name";
    let lines = wrap_label(long, 30, 2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
    assert_eq!(lines[0], "run 41 · fresh · cpu python");
    assert!(lines[1].starts_with("train.py --epochs 2"), "{lines:?}");
    assert!(lines[1].ends_with('…'), "{lines:?}");
    // One word longer than a line is broken inside it.
    assert_eq!(wrap_label("abcdefghij", 4, 3), vec!["abcd", "efgh", "ij"]);

    let points: Vec<Point> = [(1, 90.0), (8, 600.0), (64, 2000.0)]
        .iter()
        .map(|&(b, s)| ok_point(b, s, u64::from(b) << 20))
        .collect();
    let svg = overlay_svg(
        &[
            Overlay {
                label: short,
                points: &points,
            },
            Overlay {
                label: long,
                points: &points,
            },
        ],
        360,
        460,
    )
    .expect("svg");
    let fit = legend_chars(360, 102);
    let texts: Vec<String> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| {
            Some(
                t.split_once('>')?
                    .1
                    .split_once("</text>")?
                    .0
                    .trim()
                    .to_owned(),
            )
        })
        .collect();
    assert!(texts.iter().any(|t| t == short), "{texts:?}");
    let wrapped = wrap_label(long, fit, 2);
    for line in &wrapped {
        assert!(texts.contains(line), "{line} not among {texts:?}");
        assert!(line.chars().count() <= fit);
    }
    assert!(
        !texts.iter().any(|t| t == long),
        "the whole label would run past the edge"
    );
}

#[test]
fn points_with_their_energy_add_samples_per_joule_on_a_scale_of_their_own() {
    // Batch 4 draws 300 W at 3000 samples/s (10 samples/J); batch 16 draws 400 W at 3200
    // (8 samples/J): the faster batch is the less efficient one.
    let points: Vec<Point> = [(1, 900.0, 250.0), (4, 3000.0, 300.0), (16, 3200.0, 400.0)]
        .iter()
        .map(|&(b, s, watts)| {
            let mut p = ok_point(b, s, u64::from(b) * (300 << 20));
            p.conditions = Some(headroom_model::conditions::TimedConditions {
                samples: 5,
                seconds: 4.0,
                energy_j: Some(watts * 4.0),
                energy_source: Some("NVML energy counter".into()),
                ..Default::default()
            });
            p
        })
        .collect();
    let chart = |points: &[Point]| {
        sweep_svg(&ChartSpec {
            points,
            summary: None,
            budget_bytes: None,
            width: 360,
            height: 420,
        })
        .expect("svg")
    };
    let svg = chart(&points);
    if let Ok(dir) = std::env::var("HEADROOM_PLOT_OUT") {
        std::fs::write(std::path::Path::new(&dir).join("sweep_energy.svg"), &svg).expect("write");
    }
    assert!(
        svg.contains("samples/J (green, dashed)"),
        "the right axis is named"
    );
    let labels: Vec<&str> = svg
        .split("data-label=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    assert!(
        labels.contains(&"batch 4 · 3000.0 samples/s · peak 1.2 GiB · 10.00 samples/J"),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("batch 16 ") && l.ends_with(" · 8.00 samples/J")),
        "{labels:?}"
    );
    // A triangle per point with energy (plotters draws them as polygons).
    assert_eq!(
        svg.matches("<polygon").count(),
        3,
        "three samples/J markers"
    );
    // Without energy: no right axis, no markers.
    let bare: Vec<Point> = points
        .iter()
        .cloned()
        .map(|mut p| {
            p.conditions = None;
            p
        })
        .collect();
    let svg = chart(&bare);
    assert!(!svg.contains("samples/J"));
    assert_eq!(svg.matches("<polygon").count(), 0);
}
