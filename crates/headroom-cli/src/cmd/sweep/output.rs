//! What people read: one line per point as it arrives, then the table and the recommendation.

use headroom_model::budget::format_bytes;
use headroom_model::protocol::{Point, PointStatus};

use headroom_core::jobs::sweep::SweepOutcome as Report;

fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

/// The ± of a point's throughput, e.g. "±3%".
fn opt_ci(p: &Point) -> String {
    p.ci_share()
        .map_or_else(|| "-".into(), |c| format!("±{:.0}%", c * 100.0))
}

/// How long a point was timed, marked when it was timed longer ("+"), hit the cap ("cap") or was
/// measured again ("again").
fn timed_cell(p: &Point) -> String {
    use headroom_model::protocol::TimedUntil;
    let Some(s) = p.timed_s else {
        return "-".into();
    };
    let mark = match p.timed_until {
        Some(TimedUntil::Known) => "+",
        Some(TimedUntil::Cap) => " cap",
        _ => "",
    };
    let again = if p.remeasured_from.is_some() {
        " again"
    } else {
        ""
    };
    format!("{s:.2}s{mark}{again}")
}

pub(crate) fn point_line(p: &Point) -> String {
    match p.status {
        PointStatus::Ok => format!(
            "  batch {:>6}  {:>12.1} samples/s {:>5}  p50 {:>9} ms  p95 {:>9} ms  peak {}{}{}{}",
            p.batch,
            p.samples_per_s.unwrap_or(0.0),
            opt_ci(p),
            opt_ms(p.step_ms_p50),
            opt_ms(p.step_ms_p95),
            p.peak_bytes.map_or_else(|| "-".into(), format_bytes),
            p.gpu_busy
                .map(|b| format!("  GPU busy {:.0} %", b * 100.0))
                .unwrap_or_default(),
            p.joules_per_sample()
                .map(|j| format!("  {:.1} samples/J", 1.0 / j))
                .unwrap_or_default(),
            p.timing_note()
                .map(|n| format!("  (timed {n})"))
                .unwrap_or_default()
        ),
        s => format!(
            "  batch {:>6}  {}: {}",
            p.batch,
            s.as_str(),
            p.message.as_deref().unwrap_or("")
        ),
    }
}

/// Whether `message` is one of the points' own cautions: those are said together before the
/// table ([`print_human`]), not one by one as the points arrive.
pub(crate) fn is_point_caution(points: &[Point], message: &str) -> bool {
    points
        .iter()
        .any(|p| p.cautions().iter().any(|c| c == message))
}

/// The summary first, then what it rests on, the answer last on screen: the points' cautions
/// in one line and their list, the table, the details of the answer, and the answer in one line
/// with its doubt tag.
pub(crate) fn print_human(r: &Report) {
    if r.points.is_empty() {
        return;
    }
    let cautions: Vec<(u32, String)> = r
        .points
        .iter()
        .flat_map(|p| p.cautions().into_iter().map(move |c| (p.batch, c)))
        .collect();
    if !cautions.is_empty() {
        let line = headroom_model::summary::caution_line(&r.points)
            .unwrap_or_else(|| format!("{} cautions", cautions.len()));
        println!("read with care: {line}");
        for (_, c) in &cautions {
            println!("  · {c}");
        }
        println!();
    }
    // Samples per joule where the machine gives its energy (the most efficient batch is not
    // always the fastest).
    let energy = r.points.iter().any(|p| p.joules_per_sample().is_some());
    let per_joule = |p: &Point| {
        if !energy {
            return String::new();
        }
        format!(
            " {:>10}",
            p.joules_per_sample()
                .map_or_else(|| "-".into(), |j| format!("{:.1}", 1.0 / j))
        )
    };
    println!(
        "{:>7} {:>11} {:>12} {:>5} {:>10} {:>10} {:>9} {:>9} {:>9} {:>10} {:>12}{}",
        "batch",
        "status",
        "samples/s",
        "±",
        "p50 ms",
        "p95 ms",
        "data ms",
        "fwd ms",
        "bwd ms",
        "peak",
        "timed",
        if energy {
            format!(" {:>10}", "samples/J")
        } else {
            String::new()
        }
    );
    for p in &r.points {
        println!(
            "{:>7} {:>11} {:>12} {:>5} {:>10} {:>10} {:>9} {:>9} {:>9} {:>10} {:>12}{}",
            p.batch,
            p.status.as_str(),
            p.samples_per_s
                .map_or_else(|| "-".into(), |s| format!("{s:.1}")),
            opt_ci(p),
            opt_ms(p.step_ms_p50),
            opt_ms(p.step_ms_p95),
            opt_ms(p.data_ms),
            opt_ms(p.forward_ms),
            opt_ms(p.backward_ms),
            p.peak_bytes
                .or(p.predicted_peak_bytes)
                .map_or_else(|| "-".into(), format_bytes),
            timed_cell(p),
            per_joule(p),
        );
    }
    if let Some(id) = r.run_id {
        println!("recorded as run {id} ({}) in {}", r.status, r.ledger);
    }
    if let Some(s) = &r.summary {
        let b = |v: Option<u32>| v.map_or_else(|| "-".into(), |x| x.to_string());
        let knee = if s.still_rising {
            "not reached (still rising)".to_owned()
        } else {
            b(s.knee_batch)
        };
        let largest = match s.predicted_fit_batch {
            Some(f) => format!(
                "{f} predicted, not run (largest run {})",
                b(s.max_fit_batch)
            ),
            None => b(s.max_fit_batch),
        };
        println!(
            "best batch {} · knee {knee} · largest that fits {largest} (stopped by {})",
            b(s.best_batch),
            s.limit
        );
        println!("why: {}", s.reason);
        if let Some(e) = &s.energy {
            println!("energy: {}", e.sentence());
        }
        if let Some(u) = &s.uncertain {
            println!("uncertain: {u}");
        }
    }
}

/// The answer, one line, last on screen: after [`print_human`] and anything a comparison adds.
pub(crate) fn print_answer(r: &Report) {
    if let Some(s) = &r.summary {
        println!();
        match (s.recommended_batch, &s.headline) {
            (Some(_), Some(h)) => println!("recommended: {h}"),
            (Some(rb), None) => println!("recommended: batch {rb}"),
            (None, _) => println!("no recommendation: {}", s.reason),
        }
    }
}
