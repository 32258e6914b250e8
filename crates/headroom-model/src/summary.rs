//! From measured points to the sweep's answer: the best-throughput batch, the knee, the largest
//! batch that fits, and the recommendation with its reason.

use crate::budget::format_bytes;
pub use crate::energy::{EnergyTradeoff, ENERGY_SAVING_SHARE};
use crate::planner::Limit;
use crate::protocol::{Point, PointStatus, SweepSummary};
use crate::stats::sig3;

pub use crate::planner::{KNEE_SHARE, NOISE_CREDIT};

/// One batch measured on an accelerator and on the CPU: the speed-up the decision rules use.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SpeedComparison"))]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    pub batch: u32,
    pub device: String,
    pub device_step_ms: f64,
    pub cpu_step_ms: f64,
    /// CPU step time over device step time (2.0: twice as fast).
    pub speedup: f64,
    /// How much less time a step takes on the device: (cpu − device) / cpu.
    pub faster: f64,
    pub cpu_run_id: Option<i64>,
    /// [`Comparison::sentence`], for the app and other readers of the JSON.
    #[serde(default)]
    pub text: String,
}

impl Comparison {
    /// One sentence with figures as people read them: "3.20 ms per step on cuda:0 against 41.0
    /// ms on the CPU at batch 64: 12.8× the speed".
    pub fn sentence(&self) -> String {
        format!(
            "{} ms per step on {} against {} ms on the CPU at batch {}: {}× the speed",
            sig3(self.device_step_ms),
            self.device,
            sig3(self.cpu_step_ms),
            self.batch,
            sig3(self.speedup)
        )
    }
}

/// Compares the median step time at `batch` in two sweeps' points; `None` when either lacks
/// a measured point at that batch.
pub fn compare(
    device: &str,
    device_points: &[Point],
    cpu_points: &[Point],
    batch: u32,
) -> Option<Comparison> {
    let step = |ps: &[Point]| {
        ps.iter()
            .find(|p| p.batch == batch && p.status == PointStatus::Ok)
            .and_then(|p| p.step_ms_p50)
            .filter(|ms| *ms > 0.0)
    };
    let (d, c) = (step(device_points)?, step(cpu_points)?);
    let mut out = Comparison {
        batch,
        device: device.to_owned(),
        device_step_ms: d,
        cpu_step_ms: c,
        speedup: c / d,
        faster: (c - d) / c,
        cpu_run_id: None,
        text: String::new(),
    };
    out.text = out.sentence();
    Some(out)
}

/// The points measured: ok, with a throughput.
fn measured(points: &[Point]) -> Vec<&Point> {
    points
        .iter()
        .filter(|p| p.status == PointStatus::Ok && p.samples_per_s.is_some())
        .collect()
}

/// Summarises `points` of a sweep that ended for `limit` under `budget` bytes.
pub fn summarize(points: &[Point], limit: Limit, budget: u64) -> SweepSummary {
    let ok: Vec<&Point> = measured(points);
    let sps = |p: &Point| p.samples_per_s.unwrap_or(0.0);
    let best = ok.iter().copied().max_by(|a, b| sps(a).total_cmp(&sps(b)));
    // A noisy point counts as within the knee's share of the best when its figure, raised by
    // its own noise (at most NOISE_CREDIT), reaches it: as the planner judges a batch above it
    // (`Planner::bent`), so a sweep that stopped on that judgement names the same knee.
    let credit = |p: &Point| p.noisy_share().map_or(0.0, |c| c.min(NOISE_CREDIT));
    let knee = best.and_then(|b| {
        let floor = sps(b) * KNEE_SHARE;
        ok.iter()
            .copied()
            .filter(|p| sps(p) * (1.0 + credit(p)) >= floor)
            .min_by_key(|p| p.batch)
    });
    let max_fit = ok.iter().map(|p| p.batch).max();
    let first_failing = points
        .iter()
        .filter(|p| p.status != PointStatus::Ok && max_fit.is_none_or(|m| p.batch > m))
        .map(|p| p.batch)
        .min();

    // The best is the largest batch measured and the one below it is more than the knee's share
    // slower: the curve has not bent, so its top is no knee.
    let below = best.and_then(|b| {
        ok.iter()
            .copied()
            .filter(|p| p.batch < b.batch)
            .max_by_key(|p| p.batch)
    });
    let still_rising = matches!((best, knee, max_fit), (Some(b), Some(k), Some(m)) if k.batch == b.batch && b.batch == m)
        && below.is_some();
    let knee = knee.filter(|_| !still_rising);
    let (recommended, reason) = match (best, knee) {
        (Some(b), None) if still_rising => (
            Some(b.batch),
            rising_reason(b, below, limit, budget),
        ),
        (Some(b), Some(k)) if k.batch == b.batch => (
            Some(b.batch),
            format!(
                "batch {} gives the highest throughput measured, {} samples/s, peaking at {} of a {} budget",
                b.batch,
                sig3(sps(b)),
                peak_text(b),
                format_bytes(budget)
            ),
        ),
        (Some(b), Some(k)) if sps(k) < sps(b) * KNEE_SHARE => (
            Some(k.batch),
            format!(
                "batch {} reaches {} samples/s, known only within ±{:.0} %: within its noise \
                 of {:.0}% of the best ({} at batch {}), and peaks at {} instead of {}: \
                 the larger batches bought no speed its figure can tell apart",
                k.batch,
                sig3(sps(k)),
                k.noisy_share().unwrap_or(0.0) * 100.0,
                (1.0 - KNEE_SHARE) * 100.0,
                sig3(sps(b)),
                b.batch,
                peak_text(k),
                peak_text(b)
            ),
        ),
        (Some(b), Some(k)) => (
            Some(k.batch),
            format!(
                "batch {} reaches {} samples/s, within {:.0}% of the best ({} at batch {}), \
                 and peaks at {} instead of {}: larger batches buy little speed for their memory",
                k.batch,
                sig3(sps(k)),
                (1.0 - KNEE_SHARE) * 100.0,
                sig3(sps(b)),
                b.batch,
                peak_text(k),
                peak_text(b)
            ),
        ),
        _ => (None, no_fit_reason(points, limit, budget)),
    };
    let peak_at =
        recommended.and_then(|r| ok.iter().find(|p| p.batch == r).and_then(|p| p.peak_bytes));
    let mut s = SweepSummary {
        best_batch: best.map(|p| p.batch),
        best_samples_per_s: best.map(sps),
        knee_batch: knee.map(|p| p.batch),
        max_fit_batch: max_fit,
        first_failing_batch: first_failing,
        predicted_fit_batch: None,
        limit: limit.as_str().to_owned(),
        recommended_batch: recommended,
        reason,
        peak_bytes_at_recommended: peak_at,
        still_rising,
        uncertain: None,
        energy: None,
        headline: None,
        caution_line: None,
    };
    annotate(&mut s, points);
    s
}

/// Records that the largest batch within the budget is `fit`, predicted by the memory line
/// through the measured points and not run (the knee was found below it), in the summary and its
/// reason.
pub fn predicted_fit(s: &mut SweepSummary, fit: u32, peak: Option<u64>, budget: u64) {
    s.predicted_fit_batch = Some(fit);
    let peak = peak.map_or_else(String::new, |p| format!(" at {}", format_bytes(p)));
    s.reason.push_str(&format!(
        "; the largest batch within the {} budget is {fit} by the memory line{peak} — \
         predicted, not run: the knee lies below it",
        format_bytes(budget)
    ));
}

/// Writes into `s` what the points say beyond their throughput (the machine's load beside them,
/// their spread, their energy): the doubt, the energy trade-off, the one-line answer and the
/// one-line caution. The worker summarises without seeing the machine; the job that adds the
/// machine's readings to the points calls this again.
pub fn annotate(s: &mut SweepSummary, points: &[Point]) {
    s.uncertain = uncertainty(points, s.recommended_batch);
    s.energy = energy_tradeoff(points, s.recommended_batch);
    s.headline = headline(points, s);
    s.caution_line = caution_line(points);
}

/// The measured points an answer recommending `recommended` rests on: the recommended batch,
/// the best, and the measured batch just below the recommended one (whose figure decides
/// whether the recommended one is a knee or still rising).
fn rests_on(points: &[Point], recommended: u32) -> Vec<&Point> {
    let ok: Vec<&Point> = measured(points);
    let sps = |p: &Point| p.samples_per_s.unwrap_or(0.0);
    let best = ok
        .iter()
        .max_by(|a, b| sps(a).total_cmp(&sps(b)))
        .map(|p| p.batch);
    let below = ok
        .iter()
        .filter(|p| p.batch < recommended)
        .map(|p| p.batch)
        .max();
    let mut batches: Vec<u32> = [Some(recommended), best, below]
        .into_iter()
        .flatten()
        .collect();
    batches.sort_unstable();
    batches.dedup();
    batches
        .iter()
        .filter_map(|b| ok.iter().copied().find(|p| p.batch == *b))
        .collect()
}

/// A ± share as people read it: "±17 %", "±4.2 %", "±<1 %".
fn plus_minus(share: f64) -> String {
    let pct = share * 100.0;
    if pct < 1.0 {
        "±<1 %".to_owned()
    } else if pct < 9.95 {
        format!("±{pct:.1} %")
    } else {
        format!("±{pct:.0} %")
    }
}

/// The answer in one line, for a glance: "batch 64 · 10.0 k samples/s · 665 MiB · ±17 %,
/// machine busy". The doubt tag (last) is there only when the points the answer rests on carry
/// cautions: the widest ± among them, and "machine busy" when they were timed beside other work
/// ("noisy" when only their steps varied). `None` without a recommendation.
pub fn headline(points: &[Point], s: &SweepSummary) -> Option<String> {
    let rb = s.recommended_batch?;
    let mut parts = vec![format!("batch {rb}")];
    let at = points
        .iter()
        .find(|p| p.batch == rb && p.status == PointStatus::Ok);
    if let Some(sps) = at.and_then(|p| p.samples_per_s) {
        parts.push(format!("{} samples/s", sig3(sps)));
    }
    if let Some(b) = s.peak_bytes_at_recommended {
        parts.push(format_bytes(b));
    }
    let rests = rests_on(points, rb);
    let busy = rests.iter().any(|p| !p.busy_cautions().is_empty());
    let noisy = rests.iter().any(|p| p.noisy_share().is_some());
    if busy || noisy {
        let widest = rests.iter().filter_map(|p| p.ci_share()).reduce(f64::max);
        let cause = if busy { "machine busy" } else { "noisy" };
        parts.push(match widest {
            Some(w) => format!("{}, {cause}", plus_minus(w)),
            None => cause.to_owned(),
        });
    }
    Some(parts.join(" · "))
}

/// Everything that makes a sweep's figures less sure, in one line, for a panel that shows the
/// list behind it: the points' cautions as [`caution_line`] says them, and how many other
/// warnings there are ("…: timed beside other work; 1 other warning"); with no point caution,
/// the first warning's gist up to its colon. `None` when there is nothing to say.
pub fn warnings_line(points: &[Point], warnings: &[String]) -> Option<String> {
    let cautions: Vec<String> = points.iter().flat_map(Point::cautions).collect();
    let others: Vec<&String> = warnings.iter().filter(|w| !cautions.contains(w)).collect();
    let more = |n: usize| format!("{n} other warning{}", if n == 1 { "" } else { "s" });
    match (caution_line(points), others.first()) {
        (Some(line), None) => Some(line),
        (Some(line), Some(_)) => Some(format!("{line}; {}", more(others.len()))),
        (None, Some(first)) => {
            let gist = first.split([':', ';']).next().unwrap_or(first).trim();
            Some(if others.len() == 1 {
                format!("read with care: {gist}")
            } else {
                format!("{gist}; {}", more(others.len() - 1))
            })
        }
        (None, None) => None,
    }
}

/// The per-point cautions summed up in one line: "5 of 7 points noisy (±10–19 %): timed beside
/// other work". The points' own lines ([`Point::cautions`]) stay the detail behind it. `None`
/// when no measured point carries a caution.
pub fn caution_line(points: &[Point]) -> Option<String> {
    let measured: Vec<&Point> = measured(points);
    let flagged: Vec<&&Point> = measured
        .iter()
        .filter(|p| !p.cautions().is_empty())
        .collect();
    if flagged.is_empty() {
        return None;
    }
    let shares: Vec<f64> = flagged.iter().filter_map(|p| p.noisy_share()).collect();
    let busy = flagged.iter().any(|p| !p.busy_cautions().is_empty());
    let n = measured.len();
    let of = format!(
        "{} of {n} point{}",
        flagged.len(),
        if n == 1 { "" } else { "s" }
    );
    let cause = if busy {
        "timed beside other work"
    } else {
        "their steps varied"
    };
    if shares.is_empty() {
        return Some(format!("{of} {cause}"));
    }
    let lo = shares.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = shares.iter().copied().fold(0.0, f64::max);
    let range = if plus_minus(lo) == plus_minus(hi) {
        plus_minus(hi)
    } else {
        // "±10–19 %": one sign and one unit for the span.
        format!(
            "{}–{}",
            plus_minus(lo).trim_end_matches(" %"),
            plus_minus(hi).trim_start_matches('±')
        )
    };
    Some(format!("{of} noisy ({range}): {cause}"))
}

/// Says when the answer rests on points to read with care ([`Point::cautions`]): the
/// recommended batch, the best, and the measured batch just below the recommended one (whose
/// figure decides whether the recommended one is a knee or still rising). A noisy batch far down
/// the curve changes no answer and makes none uncertain. `None` when the answer's points are
/// trusted.
pub fn uncertainty(points: &[Point], recommended: Option<u32>) -> Option<String> {
    let recommended = recommended?;
    let warned: Vec<u32> = rests_on(points, recommended)
        .iter()
        .filter(|p| !p.cautions().is_empty())
        .map(|p| p.batch)
        .collect();
    if warned.is_empty() {
        return None;
    }
    let names: Vec<String> = warned.iter().map(u32::to_string).collect();
    let list = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    };
    let own = if warned.contains(&recommended) {
        format!(" (the recommended {recommended} among them)")
    } else {
        String::new()
    };
    Some(format!(
        "the answer rests on batch {list}{own}, timed beside other work or still noisy (see the warnings): measure again on a quieter machine before relying on it"
    ))
}

/// The energy trade-off of `points` around `chosen`, where the chosen batch and at least one
/// other point have joules per sample; `None` otherwise.
pub fn energy_tradeoff(points: &[Point], chosen: Option<u32>) -> Option<EnergyTradeoff> {
    let chosen = chosen?;
    let measured: Vec<(&Point, f64, f64)> = points
        .iter()
        .filter(|p| p.status == PointStatus::Ok)
        .filter_map(|p| Some((p, p.samples_per_s?, p.joules_per_sample()?)))
        .filter(|(_, sps, j)| *sps > 0.0 && *j > 0.0)
        .collect();
    if measured.len() < 2 {
        return None;
    }
    let &(c, c_sps, c_j) = measured.iter().find(|(p, _, _)| p.batch == chosen)?;
    let &(e, e_sps, e_j) = measured
        .iter()
        .min_by(|a, b| a.2.total_cmp(&b.2).then(b.1.total_cmp(&a.1)))?;
    let mut t = EnergyTradeoff {
        efficient_batch: e.batch,
        efficient_samples_per_joule: 1.0 / e_j,
        chosen_batch: c.batch,
        chosen_samples_per_joule: 1.0 / c_j,
        speed_share: e_sps / c_sps,
        energy_share: e_j / c_j,
        on_battery: measured.iter().any(|(p, _, _)| {
            p.conditions
                .as_ref()
                .is_some_and(|k| k.on_battery == Some(true))
        }),
        text: String::new(),
    };
    t.text = t.sentence();
    Some(t)
}

/// A drop below both neighbours larger than this share (or than the points' own spread, when
/// that is wider) breaks the curve's shape.
pub const DIP_SHARE: f64 = 0.10;

/// The batch whose throughput breaks the curve's shape — a drop between two rises, below both
/// measured neighbours by more than [`DIP_SHARE`] and the three points' own intervals — and
/// that was not measured again yet: the first such, smallest batch first.
pub fn shape_break(points: &[Point]) -> Option<u32> {
    let mut ok: Vec<&Point> = measured(points);
    ok.sort_by_key(|p| p.batch);
    let sps = |p: &Point| p.samples_per_s.unwrap_or(0.0);
    let ci = |p: &Point| p.ci_share().unwrap_or(0.0);
    ok.windows(3).find_map(|w| {
        let (a, b, c) = (w[0], w[1], w[2]);
        let tol = DIP_SHARE.max(ci(b) + ci(a).max(ci(c)));
        (b.remeasured_from.is_none() && sps(b) < sps(a).min(sps(c)) * (1.0 - tol))
            .then_some(b.batch)
    })
}

/// Why the largest batch is recommended while throughput still rises there, and what to do.
fn rising_reason(b: &Point, below: Option<&Point>, limit: Limit, budget: u64) -> String {
    let sps = |p: &Point| p.samples_per_s.unwrap_or(0.0);
    let gain = below
        .filter(|p| sps(p) > 0.0)
        .map(|p| {
            format!(
                " (+{:.0}% over batch {})",
                (sps(b) / sps(p) - 1.0) * 100.0,
                p.batch
            )
        })
        .unwrap_or_default();
    let then = match limit {
        Limit::MaxBatch => format!(
            "it is the largest allowed: to find the knee, raise the largest batch (--max-batch {})",
            b.batch.saturating_mul(4)
        ),
        Limit::Budget => format!(
            "a larger batch needs more than the {} budget, so this is the fastest that fits",
            format_bytes(budget)
        ),
        Limit::Oom => {
            "a larger batch ran out of memory, so this is the fastest that fits".to_owned()
        }
        _ => "no larger batch was measured".to_owned(),
    };
    format!(
        "throughput is still rising at batch {}, {} samples/s{gain}, peaking at {}; no knee yet: {then}",
        b.batch,
        sig3(sps(b)),
        peak_text(b)
    )
}

fn peak_text(p: &Point) -> String {
    p.peak_bytes
        .map_or_else(|| "an unmeasured amount".to_owned(), format_bytes)
}

fn no_fit_reason(points: &[Point], limit: Limit, budget: u64) -> String {
    let first = points.iter().min_by_key(|p| p.batch);
    let msg = first.and_then(|p| p.message.clone()).unwrap_or_default();
    let batch = first.map_or(0, |p| p.batch);
    match limit {
        Limit::Oom => format!(
            "batch {batch}, the smallest tried, ran out of device memory ({msg}); try a smaller batch, model, input or dtype"
        ),
        Limit::Budget => format!(
            "batch {batch}, the smallest tried, needs more than the {} budget; raise --budget or try a smaller batch",
            format_bytes(budget)
        ),
        _ => format!("no batch could be measured: {msg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::TimedConditions;

    /// A point timed for 10 s at `watts` mean power.
    fn powered(batch: u32, sps: f64, watts: f64, battery: bool) -> Point {
        let mut p = ok(batch, sps, u64::from(batch) << 20);
        p.conditions = Some(TimedConditions {
            samples: 10,
            seconds: 10.0,
            energy_j: Some(watts * 10.0),
            energy_source: Some("power × time".into()),
            on_battery: Some(battery),
            ..TimedConditions::default()
        });
        p
    }

    #[test]
    fn the_most_efficient_batch_is_named_beside_the_fastest_with_what_it_keeps_and_saves() {
        // 64: 910 samples/s at 30 W (0.0330 J/sample); 256: 1000 at 47 W (0.047): 64 keeps
        // 91 % of the speed for 70 % of the energy per sample.
        let pts = [
            powered(16, 400.0, 20.0, false),
            powered(64, 910.0, 30.0, true),
            powered(256, 1000.0, 47.0, false),
        ];
        let s = summarize(&pts, Limit::MaxBatch, 1 << 40);
        assert_eq!(s.recommended_batch, Some(256));
        let e = s.energy.expect("every point has its energy");
        assert_eq!((e.efficient_batch, e.chosen_batch), (64, 256));
        assert!((e.speed_share - 0.91).abs() < 1e-9, "{e:?}");
        assert!(
            (e.energy_share - (30.0 / 910.0) / (47.0 / 1000.0)).abs() < 1e-9,
            "{e:?}"
        );
        assert!(e.saves() && e.on_battery);
        assert_eq!(e.text, e.sentence());
        assert_eq!(
            e.sentence(),
            "on battery, batch 64 gives 91 % of batch 256's speed for 70 % of its energy per sample (30.3 samples/J against 21.3)"
        );
        // The fastest is also the most efficient: said so, no trade.
        let flat = [
            powered(16, 400.0, 40.0, false),
            powered(64, 1000.0, 40.0, false),
        ];
        let e = energy_tradeoff(&flat, Some(64)).expect("energy");
        assert!(!e.saves());
        assert_eq!(
            e.sentence(),
            "batch 64 is also about the most energy-efficient measured (25.0 samples/J)"
        );
        // A saving under 10 % is not a trade worth naming.
        let close = [
            powered(32, 950.0, 39.0, false),
            powered(64, 1000.0, 40.0, false),
        ];
        assert!(!energy_tradeoff(&close, Some(64)).expect("energy").saves());
        // Without energy on the chosen point, or on only one point: nothing.
        let mut bare = flat.clone();
        bare[1].conditions = None;
        assert_eq!(energy_tradeoff(&bare, Some(64)), None);
        assert_eq!(energy_tradeoff(&flat[..1], Some(16)), None);
        assert_eq!(
            summarize(&[ok(8, 1.0, 1), ok(16, 2.0, 2)], Limit::MaxBatch, 1 << 30).energy,
            None
        );
    }

    #[test]
    fn compare_uses_the_median_step_at_the_same_batch() {
        let step = |batch: u32, ms: f64| {
            let mut p = ok(batch, 1000.0 / ms, 1 << 20);
            p.step_ms_p50 = Some(ms);
            p
        };
        let dev = [step(32, 5.0), step(64, 8.0)];
        let cpu = [step(64, 40.0)];
        let c = compare("cuda:0", &dev, &cpu, 64).expect("both have batch 64");
        assert!((c.speedup - 5.0).abs() < 1e-12 && (c.faster - 0.8).abs() < 1e-12);
        assert_eq!(c.device, "cuda:0");
        assert_eq!(
            c.text,
            "8.00 ms per step on cuda:0 against 40.0 ms on the CPU at batch 64: 5.00× the speed"
        );
        assert!(
            compare("cuda:0", &dev, &cpu, 32).is_none(),
            "no CPU point at 32"
        );
        let failed = [Point::failed(64, PointStatus::Oom, "oom")];
        assert!(compare("cuda:0", &dev, &failed, 64).is_none());
    }

    fn ok(batch: u32, sps: f64, peak: u64) -> Point {
        let mut p = Point::failed(batch, PointStatus::Ok, "");
        p.message = None;
        p.samples_per_s = Some(sps);
        p.peak_bytes = Some(peak);
        p
    }

    /// The H200's first sweep of 2026-12-06: 281 read 1880 samples/s over eight steps that
    /// varied 27 % (±18.6 %), 588 2095. Within its noise 281 is as good as 95 % of 588 — the
    /// knee the two quieter sweeps found (2120 against 2155) — and the answer says how it knows.
    /// A quiet 281 at the same figure is not.
    #[test]
    fn a_noisy_point_within_its_noise_of_the_knees_share_is_the_knee_and_says_so() {
        let noisy = |batch: u32, sps: f64, cv: f64, steps: u32| {
            let mut p = ok(batch, sps, u64::from(batch) << 20);
            p.step_cv = Some(cv);
            p.timed_steps = steps;
            p
        };
        let pts = [
            ok(16, 750.9, 16 << 20),
            noisy(64, 1506.8, 0.28, 28),
            noisy(281, 1879.9, 0.27, 8),
            ok(588, 2095.2, 588 << 20),
        ];
        let s = summarize(&pts, Limit::Budget, 1 << 40);
        assert_eq!((s.knee_batch, s.recommended_batch), (Some(281), Some(281)));
        assert!(!s.still_rising);
        assert!(
            s.reason
                .contains("known only within ±19 %: within its noise of 5% of the best"),
            "{}",
            s.reason
        );
        let quiet = [
            ok(16, 750.9, 16 << 20),
            ok(64, 1506.8, 64 << 20),
            ok(281, 1879.9, 281 << 20),
            ok(588, 2095.2, 588 << 20),
        ];
        let s = summarize(&quiet, Limit::Budget, 1 << 40);
        assert_eq!(s.recommended_batch, Some(588));
    }

    #[test]
    fn a_drop_between_two_rises_is_a_shape_break_and_only_once() {
        // The curve: 2600 at 128, 690 at 256, then up again at 512.
        let mut pts = vec![
            ok(64, 1500.0, 1),
            ok(128, 2600.0, 2),
            ok(256, 690.0, 3),
            ok(512, 3100.0, 4),
        ];
        assert_eq!(shape_break(&pts), Some(256));
        // Measured again, it is not asked for twice.
        pts[2].remeasured_from = Some(690.0);
        assert_eq!(shape_break(&pts), None);
        // At its boundary: 10 % below the lower neighbour breaks nothing, 10.1 % does.
        let at = |mid: f64| shape_break(&[ok(1, 1000.0, 1), ok(2, mid, 1), ok(4, 1200.0, 1)]);
        assert_eq!(at(900.0), None);
        assert_eq!(at(899.0), Some(2));
        // A knee that falls off past its top is no break: nothing rises after the drop.
        assert_eq!(
            shape_break(&[ok(1, 100.0, 1), ok(2, 300.0, 1), ok(4, 200.0, 1)]),
            None
        );
        // Noisy points widen the band: ±8 % each makes a 15 % drop inside it.
        let mut noisy = [ok(1, 1000.0, 1), ok(2, 850.0, 1), ok(4, 1000.0, 1)];
        for p in &mut noisy {
            p.step_cv = Some(0.41);
            p.timed_steps = 100;
        }
        assert!(noisy[1]
            .ci_share()
            .is_some_and(|c| (c - 0.08).abs() < 0.001));
        assert_eq!(shape_break(&noisy), None);
        // Failed points are not neighbours.
        let with_oom = [
            ok(1, 1000.0, 1),
            Point::failed(2, PointStatus::Oom, "oom"),
            ok(4, 1200.0, 1),
        ];
        assert_eq!(shape_break(&with_oom), None);
    }

    #[test]
    fn the_answer_is_uncertain_when_its_points_carry_cautions() {
        let busy = || crate::pointload::PointLoad {
            other_cores: 1.2,
            busiest: Some("zoom.us".into()),
            busiest_cores: 1.1,
            seconds: 0.3,
            pressure: None,
            pressure_detail: None,
            swap_growth_bytes: None,
            accel_others: Vec::new(),
        };
        let mut pts = vec![
            ok(1, 100.0, 1),
            ok(64, 1000.0, 1),
            ok(128, 1900.0, 2),
            ok(256, 2000.0, 3),
        ];
        assert_eq!(summarize(&pts, Limit::MaxBatch, 1 << 30).uncertain, None);
        // A noisy batch far down the curve changes no answer.
        pts[0].step_cv = Some(1.0);
        pts[0].timed_steps = 20;
        assert!(!pts[0].cautions().is_empty());
        assert_eq!(summarize(&pts, Limit::MaxBatch, 1 << 30).uncertain, None);
        // The batch below the knee decides it: timed under load, the answer is uncertain.
        pts[1].load = Some(busy());
        let s = summarize(&pts, Limit::MaxBatch, 1 << 30);
        assert_eq!(s.recommended_batch, Some(128));
        let u = s.uncertain.expect("uncertain");
        assert!(
            u.starts_with("the answer rests on batch 64, timed beside other work"),
            "{u}"
        );
        // The recommended batch itself, and the best.
        pts[2].load = Some(busy());
        pts[3].load = Some(busy());
        let u = summarize(&pts, Limit::MaxBatch, 1 << 30)
            .uncertain
            .expect("uncertain");
        assert!(
            u.starts_with(
                "the answer rests on batch 64, 128 and 256 (the recommended 128 among them)"
            ),
            "{u}"
        );
        // No answer, nothing to be unsure of; a failed point carries no caution.
        assert_eq!(uncertainty(&pts, None), None);
        let mut failed = Point::failed(512, PointStatus::Oom, "oom");
        failed.step_cv = Some(1.0);
        assert!(failed.cautions().is_empty());
    }

    #[test]
    fn the_answer_is_one_line_with_its_doubt_and_the_cautions_one_more() {
        // The sweep: 10041 samples/s at batch 64, peaking at 665 MiB.
        let mib = 1 << 20;
        let mut pts = vec![
            ok(8, 2100.0, 100 * mib),
            ok(16, 4400.0, 160 * mib),
            ok(32, 7691.8, 330 * mib),
            ok(64, 10041.0, 665 * mib),
        ];
        let quiet = summarize(&pts, Limit::MaxBatch, 20 << 30);
        assert_eq!(quiet.recommended_batch, Some(64));
        assert_eq!(
            quiet.headline.as_deref(),
            Some("batch 64 · 10.0 k samples/s · 665 MiB")
        );
        assert_eq!(quiet.caution_line, None);
        // Prose carries three significant digits, not "10041.0".
        assert!(
            quiet.reason.contains("10.0 k samples/s"),
            "{}",
            quiet.reason
        );
        // Steps that varied: the ± of the points the answer rests on, and how many points.
        let noisy = |p: &mut Point, cv: f64| {
            p.step_cv = Some(cv);
            p.timed_steps = 137;
        };
        noisy(&mut pts[0], 1.15); // ±19.3 %
        noisy(&mut pts[2], 0.6); // ±10 %
        noisy(&mut pts[3], 1.0); // ±16.7 %
        let s = summarize(&pts, Limit::MaxBatch, 20 << 30);
        assert_eq!(
            s.headline.as_deref(),
            Some("batch 64 · 10.0 k samples/s · 665 MiB · ±17 %, noisy")
        );
        assert_eq!(
            s.caution_line.as_deref(),
            Some("3 of 4 points noisy (±10–19 %): their steps varied")
        );
        // Timed beside other work: the cause is the machine.
        pts[1].load = Some(crate::pointload::PointLoad {
            other_cores: 1.5,
            busiest: Some("chrome".into()),
            busiest_cores: 1.2,
            seconds: 0.3,
            pressure: None,
            pressure_detail: None,
            swap_growth_bytes: None,
            accel_others: Vec::new(),
        });
        assert!(!pts[1].busy_cautions().is_empty());
        let s = summarize(&pts, Limit::MaxBatch, 20 << 30);
        assert_eq!(
            s.caution_line.as_deref(),
            Some("4 of 4 points noisy (±10–19 %): timed beside other work")
        );
        // Batch 32 (below the recommended) was busy-free; 16 is not one the answer rests on.
        assert!(s
            .headline
            .as_deref()
            .is_some_and(|h| h.ends_with("±17 %, noisy")));
        pts[3].load = pts[1].load.clone();
        let s = summarize(&pts, Limit::MaxBatch, 20 << 30);
        assert!(
            s.headline
                .as_deref()
                .is_some_and(|h| h.ends_with("· ±17 %, machine busy")),
            "{:?}",
            s.headline
        );
        // Busy only, every point quiet in its steps: no ± range, the count and the cause.
        for p in &mut pts {
            p.step_cv = None;
        }
        let s = summarize(&pts, Limit::MaxBatch, 20 << 30);
        assert_eq!(
            s.caution_line.as_deref(),
            Some("2 of 4 points timed beside other work")
        );
        assert!(s
            .headline
            .as_deref()
            .is_some_and(|h| h.ends_with("665 MiB · machine busy")));
        // No recommendation, no headline; one point, no plural.
        let none = summarize(
            &[Point::failed(8, PointStatus::Oom, "oom")],
            Limit::Oom,
            1 << 30,
        );
        assert_eq!(none.headline, None);
        let mut one = vec![ok(8, 12.345, mib)];
        noisy(&mut one[0], 0.05);
        noisy(&mut one[0], 0.4);
        assert_eq!(
            summarize(&one, Limit::MaxBatch, 1 << 30)
                .caution_line
                .as_deref(),
            Some("1 of 1 point noisy (±6.7 %): their steps varied")
        );
    }

    #[test]
    fn the_warnings_line_counts_what_is_not_a_point_s_caution() {
        let mut noisy = ok(16, 1000.0, 1);
        noisy.step_cv = Some(1.0);
        noisy.timed_steps = 137;
        let theirs = noisy.cautions();
        let machine =
            "other processes were using 1.0 of this machine's 2 cores: the figures may read low"
                .to_owned();
        assert_eq!(warnings_line(&[ok(8, 500.0, 1)], &[]), None);
        assert_eq!(
            warnings_line(&[noisy.clone()], &theirs).as_deref(),
            Some("1 of 1 point noisy (±17 %): their steps varied")
        );
        let mut all = theirs.clone();
        all.push(machine.clone());
        assert_eq!(
            warnings_line(&[noisy], &all).as_deref(),
            Some("1 of 1 point noisy (±17 %): their steps varied; 1 other warning")
        );
        assert_eq!(
            warnings_line(&[ok(8, 500.0, 1)], std::slice::from_ref(&machine)).as_deref(),
            Some("read with care: other processes were using 1.0 of this machine's 2 cores")
        );
        assert_eq!(
            warnings_line(&[], &[machine.clone(), machine]).as_deref(),
            Some("other processes were using 1.0 of this machine's 2 cores; 1 other warning")
        );
    }

    #[test]
    fn a_batch_measured_again_takes_its_first_measurement_s_place() {
        let mut pts = vec![ok(1, 10.0, 1), ok(2, 5.0, 1), ok(4, 40.0, 1)];
        let mut again = ok(2, 20.0, 1);
        again.remeasured_from = Some(5.0);
        assert_eq!(crate::protocol::upsert_point(&mut pts, again), 1);
        assert_eq!(pts.len(), 3);
        assert_eq!(pts[1].samples_per_s, Some(20.0));
        // A new batch, or the same batch not marked as measured again, is added.
        assert_eq!(crate::protocol::upsert_point(&mut pts, ok(8, 50.0, 1)), 3);
        assert_eq!(crate::protocol::upsert_point(&mut pts, ok(8, 51.0, 1)), 4);
        let mut timed = ok(2, 20.0, 1);
        timed.timed_s = Some(0.931);
        timed.timed_until = Some(crate::protocol::TimedUntil::Known);
        timed.remeasured_from = Some(5.0);
        assert_eq!(
            timed.timing_note().as_deref(),
            Some("0.93 s, timed longer until known within ±5 %; measured again: its first 5.00 samples/s broke the curve")
        );
        assert_eq!(ok(2, 1.0, 1).timing_note(), None);
    }

    #[test]
    fn knee_is_the_smallest_batch_near_the_best() {
        let pts = vec![
            ok(1, 100.0, 10),
            ok(2, 180.0, 20),
            ok(4, 960.0, 40),
            ok(8, 1000.0, 80),
            Point::failed(16, PointStatus::Oom, "out of memory"),
        ];
        let s = summarize(&pts, Limit::Oom, 1000);
        assert_eq!(s.best_batch, Some(8));
        assert_eq!(s.knee_batch, Some(4));
        assert_eq!(s.max_fit_batch, Some(8));
        assert_eq!(s.first_failing_batch, Some(16));
        assert_eq!(s.recommended_batch, Some(4));
        assert_eq!(s.peak_bytes_at_recommended, Some(40));
        assert!(s.reason.contains("batch 4"), "{}", s.reason);
    }

    #[test]
    fn a_curve_still_rising_at_the_largest_batch_has_no_knee_and_says_what_to_try() {
        let pts = vec![
            ok(128, 2600.0, 10),
            ok(256, 4000.0, 20),
            ok(512, 6000.0, 40),
        ];
        let s = summarize(&pts, Limit::MaxBatch, 1000);
        assert!(s.still_rising);
        assert_eq!(
            s.knee_batch, None,
            "the top of a rising curve is not its knee"
        );
        assert_eq!(s.recommended_batch, Some(512));
        assert!(
            s.reason.contains("still rising at batch 512")
                && s.reason.contains("+50% over batch 256")
                && s.reason.contains("--max-batch 2048"),
            "{}",
            s.reason
        );
        // Stopped by the budget, the top is the fastest that fits.
        let b = summarize(&pts, Limit::Budget, 1000);
        assert!(
            b.still_rising && b.reason.contains("the fastest that fits"),
            "{}",
            b.reason
        );
        // Bent at the top: the knee is below it, as before.
        let bent = vec![
            ok(128, 2600.0, 10),
            ok(256, 5900.0, 20),
            ok(512, 6000.0, 40),
        ];
        let k = summarize(&bent, Limit::MaxBatch, 1000);
        assert!(!k.still_rising);
        assert_eq!(k.knee_batch, Some(256));
        // One point is not a curve.
        let one = summarize(&[ok(16, 100.0, 1)], Limit::MaxBatch, 1000);
        assert!(!one.still_rising);
        assert_eq!(one.knee_batch, Some(16));
    }

    #[test]
    fn nothing_fits_says_why() {
        let pts = vec![Point::failed(1, PointStatus::OverBudget, "predicted 2 GiB")];
        let s = summarize(&pts, Limit::Budget, 1 << 20);
        assert_eq!(s.recommended_batch, None);
        assert!(s.reason.contains("--budget"), "{}", s.reason);
    }
}
