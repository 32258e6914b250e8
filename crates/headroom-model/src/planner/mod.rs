//! The sweep planner: which batch to run next. It doubles the batch until the device runs out of
//! memory, the budget is reached or the maximum batch is passed, then narrows the gap between the
//! last batch that fitted and the first that did not. Before each point it predicts the peak
//! memory from the points already measured (linear in the batch) and refuses points predicted
//! over budget.
//!
//! With prediction on, it also uses the line to save time: once a doubling gains less than
//! [`PLATEAU_GAIN`] (10 %) in throughput (the knee is behind), it stops doubling and jumps straight to
//! the largest batch the line says fits, then verifies that batch by running it; between a fitting
//! and a failing batch it tries the line's answer instead of the midpoint. A verified point that
//! turns out over budget is measured, so the next line goes through it and lands closer. In the
//! launch-bound range, where throughput has grown in proportion to the batch twice in a row (the
//! step time is flat: the device waits on kernel launches, not arithmetic), it strides ×4
//! instead of ×2 ([`LINEAR_SCALING`]): the points it skips would only repeat the same step time.
//! Pure: it never runs anything, the worker feeds it outcomes.

use crate::protocol::{BatchPlan, PointStatus};

/// Bisection stops when the gap between fitting and failing batches is at most this share of
/// the fitting batch (or 1).
pub const BISECT_TOLERANCE: f64 = 0.02;

/// A doubling of the batch that gains less than this share of throughput means the knee is behind
/// and the remaining question is only the largest batch that fits.
pub const PLATEAU_GAIN: f64 = 0.10;

/// The doubling before that one must have gained less than this (see `Planner::plateau`).
pub const SATURATING_GAIN: f64 = 0.5;

/// With points that each cost a process start (a sweep over the user's script), the knee is
/// narrowed until the batches on either side of it are at most this ratio apart.
pub const COSTLY_KNEE_RATIO: f64 = 5.0;

/// With costly points the jump aims this share below the line's largest fit: a start that lands
/// over (the caching allocator's blocks make a device's peak step a little above the line)
/// costs a whole start again (on the H200, resnet50's line from batches 16 and 64 put the fit at
/// 1316; 1303 peaked 0.8 % over the budget, 1264 fitted).
pub const COSTLY_AIM: f64 = 0.03;

/// With costly points, a knee probe whose throughput gained less than this per doubling of the
/// batch over the fitting batch below it leaves the knee near: the next probe goes halfway (in the
/// log) to the line's fit instead of running the fit itself. On a data-bound script the fit is
/// the most expensive start of all (on the H200, resnet50 with 12 DataLoader workers took 20 s
/// for its first batch of 1231 and 5 s to give its 121 GiB back) and buys no speed.
pub const SLOW_GAIN: f64 = 0.20;

/// A slow probe is followed by another only while the line's fit is at least this many times the
/// probe (the next lands at least √1.5 ≈ 1.22 times above it); closer, the fit is verified.
pub const PROBE_RATIO: f64 = 1.5;

/// Any probe (or the second small point) is followed by another, not by the fit, while the fit
/// is more than this many times above it: the probe halfway costs less than the fit (its first
/// batch is smaller) and tells whether the fit is worth a start at all. On the H100, resnet50
/// with 12 workers: 64 at 1031 samples/s (±12 %) and 210 at 1781 looked fast, the fit 694 ran
/// (1672, no faster) and the sweep took 82 s; a probe at 382 gained 2.6 % and ended it in 53 s.
pub const FAST_PROBE_RATIO: f64 = 2.5;

/// What a start begun ahead assumes of the one measured now (see [`Planner::speculate`]): its
/// throughput this share above the best so far — still rising, slowly, the case that asks for
/// the most starts on a costly sweep.
pub const SPECULATED_GAIN: f64 = 0.10;

/// A start begun ahead for a knee probe serves in its place when its batch is within this share
/// of the probe's: a probe only has to land between its neighbours (see [`Planner::accepts`]).
pub const PROBE_SLACK: f64 = 0.2;

/// The most a noisy point's ± share widens the bar a batch above it must clear to count as
/// faster ([`Planner::noisy`]). On the H200, resnet50 with 12 DataLoader workers: 281 read 1880
/// samples/s (±18.6 %, eight timed steps) where two other sweeps read 2120; 588 at 2095 looked
/// 11 % faster, so a probe at 850 ran (31 s, 1944) and the sweep took 89 s instead of ~45.
pub const NOISE_CREDIT: f64 = 0.10;

/// Throughput that grew at least this share of the batch's growth (×1.8 for a doubling) counts as
/// proportional to the batch: the step time is flat, the range is launch-bound.
pub const LINEAR_SCALING: f64 = 0.9;

/// The knee is the smallest batch within this share of the best throughput.
pub const KNEE_SHARE: f64 = 0.95;

/// What the planner wants done next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Measure this batch; `predicted` is the expected peak when the planner could predict it.
    Run { batch: u32, predicted: Option<u64> },
    /// Do not run this batch: its predicted peak is above the budget. Record it as over budget.
    Skip { batch: u32, predicted: u64 },
    /// The sweep is over.
    Done { limit: Limit },
}

/// Why a sweep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The device ran out of memory.
    Oom,
    /// The memory budget, predicted or measured.
    Budget,
    /// The largest batch allowed was reached and fitted.
    MaxBatch,
    /// Every batch of an explicit list was visited.
    List,
    /// A point failed for another reason.
    Error,
}

impl Limit {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Oom => "oom",
            Self::Budget => "budget",
            Self::MaxBatch => "max_batch",
            Self::List => "list",
            Self::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Outcome {
    batch: u32,
    status: PointStatus,
    peak: Option<u64>,
    samples_per_s: Option<f64>,
    /// How far its throughput is known (± share), where that is wider than a figure to trust.
    noise: Option<f64>,
}

/// The planner's state for one sweep.
#[derive(Debug, Clone)]
pub struct Planner {
    plan: BatchPlan,
    budget: u64,
    predict: bool,
    baseline: Option<u64>,
    outcomes: Vec<Outcome>,
    done: Option<Limit>,
    /// Each point costs a process start (see [`Planner::costly`]).
    costly: bool,
    /// The last batch asked for was a knee probe: a nearby batch serves as well.
    probe: Option<u32>,
}

impl Planner {
    /// A planner for `plan` under `budget` bytes. `baseline` is the memory held before any point
    /// (model and optimizer state), which anchors the first prediction. With `predict` false no
    /// point is refused on prediction alone.
    pub fn new(plan: BatchPlan, budget: u64, baseline: Option<u64>, predict: bool) -> Self {
        Self {
            plan,
            budget,
            predict,
            baseline,
            outcomes: Vec::new(),
            done: None,
            costly: false,
            probe: None,
        }
    }

    /// For points that each cost a start of the user's program (seconds each): the memory line
    /// from two small points (the start and four times it); then knee probes, each halfway (in
    /// the log of the batch) from the largest fitting batch to the largest the line says fits,
    /// while that fit is more than [`FAST_PROBE_RATIO`] times above it — or [`PROBE_RATIO`] times
    /// where the last one gained little (under [`SLOW_GAIN`] a doubling). Closer, the fit itself,
    /// verified. A probe that gained nothing worth its memory (under 1/[`KNEE_SHARE`]) ends the
    /// search upward, and the fit is then the line's prediction, not run
    /// ([`Planner::unverified_fit`]). Then the knee is narrowed in the log of the batch until the
    /// batches around it are at most [`COSTLY_KNEE_RATIO`] apart. Few points, each one needed.
    #[must_use]
    pub fn costly(mut self) -> Self {
        self.costly = true;
        self
    }

    /// The budget, once it is known (a device's capacity is learnt from the first point).
    pub fn set_budget(&mut self, budget: u64) {
        self.budget = budget;
    }

    /// The budget in force.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Records how the point at `batch` ended, its measured peak and throughput (if any).
    pub fn record(
        &mut self,
        batch: u32,
        status: PointStatus,
        peak: Option<u64>,
        samples_per_s: Option<f64>,
    ) {
        self.outcomes.push(Outcome {
            batch,
            status,
            peak,
            samples_per_s,
            noise: None,
        });
        if status == PointStatus::Error {
            self.done = Some(Limit::Error);
        }
    }

    /// Says that the throughput recorded for `batch` is known only within ± `share` (a costly
    /// point's few timed steps varied): a batch above it that gains less than that noise and the
    /// knee's share together has not shown that it buys speed.
    pub fn noisy(&mut self, batch: u32, share: f64) {
        if let Some(o) = self.outcomes.iter_mut().rev().find(|o| o.batch == batch) {
            o.noise = Some(share.clamp(0.0, NOISE_CREDIT));
        }
    }

    /// Puts a batch measured again in the place of its first outcome.
    pub fn replace(
        &mut self,
        batch: u32,
        status: PointStatus,
        peak: Option<u64>,
        samples_per_s: Option<f64>,
    ) {
        self.outcomes.retain(|o| o.batch != batch);
        self.record(batch, status, peak, samples_per_s);
    }

    /// The line peak memory follows over the batch, as (a point on it, slope in bytes per
    /// sample): through the two largest measured points (fitting, or measured over budget), or
    /// through the baseline and the only one.
    fn line(&self) -> Option<((f64, f64), f64)> {
        let mut measured: Vec<(f64, f64)> = self
            .outcomes
            .iter()
            .filter(|o| matches!(o.status, PointStatus::Ok | PointStatus::OverBudget))
            .filter_map(|o| o.peak.map(|p| (f64::from(o.batch), to_f64(p))))
            .collect();
        measured.sort_by(|a, b| a.0.total_cmp(&b.0));
        measured.dedup_by(|a, b| a.0 == b.0);
        let (p0, p1) = match measured.as_slice() {
            [] => return None,
            [only] => ((0.0, to_f64(self.baseline?)), *only),
            [.., a, b] => (*a, *b),
        };
        let slope = ((p1.1 - p0.1) / (p1.0 - p0.0)).max(0.0);
        Some((p1, slope))
    }

    /// Predicted peak bytes at `batch`, from the measured points (see `line`).
    pub fn predict_peak(&self, batch: u32) -> Option<u64> {
        let (p1, slope) = self.line()?;
        let v = p1.1 + slope * (f64::from(batch) - p1.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(v.max(0.0) as u64)
    }

    /// The batch this planner would run after `batch` if `batch` fitted at the peak predicted for
    /// it (none: none recorded) and ran at twice the best throughput so far (a costly sweep:
    /// [`SPECULATED_GAIN`] above it), the outcome that leaves the most to do: a start worth
    /// beginning while `batch` is measured. `None` when the sweep would end there. The best is
    /// read at the top of its noise ([`Planner::noisy`]), as [`Planner::next_step`] reads the
    /// batch below a probe: a gain that its noise would swallow ends the search upward.
    pub fn speculate(&self, batch: u32, predicted: Option<u64>) -> Option<u32> {
        let best = self
            .raised_throughputs()
            .iter()
            .map(|o| o.1)
            .fold(1.0, f64::max);
        let mut p = self.clone();
        let gain = if self.costly {
            1.0 + SPECULATED_GAIN
        } else {
            2.0
        };
        p.record(batch, PointStatus::Ok, predicted, Some(best * gain));
        for _ in 0..4 {
            match p.next_step() {
                Next::Run { batch: b, .. } => return (b != batch).then_some(b),
                Next::Skip { batch: b, .. } => p.record(b, PointStatus::OverBudget, None, None),
                Next::Done { .. } => return None,
            }
        }
        None
    }

    /// The largest batch the line predicts within the budget; `None` when memory does not grow
    /// with the batch (or nothing is measured yet).
    pub fn predicted_fit(&self) -> Option<u32> {
        let (p1, slope) = self.line()?;
        if slope <= 0.0 {
            return None;
        }
        let b = p1.0 + (to_f64(self.budget) - p1.1) / slope;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        (b >= 1.0).then(|| b.min(f64::from(u32::MAX)).floor() as u32)
    }

    /// (batch, samples/s) of the points that ran, by batch.
    fn throughputs(&self) -> Vec<(u32, f64)> {
        self.ran_by_batch(|_| 0.0)
    }

    /// [`Self::throughputs`], each figure raised by its own noise ([`Planner::noisy`]): how fast
    /// a noisy point could be.
    fn raised_throughputs(&self) -> Vec<(u32, f64)> {
        self.ran_by_batch(|o| o.noise.unwrap_or(0.0))
    }

    /// (batch, samples/s × (1 + `share`)) of the points that ran, by batch.
    fn ran_by_batch(&self, share: impl Fn(&Outcome) -> f64) -> Vec<(u32, f64)> {
        let mut ok: Vec<(u32, f64)> = self
            .outcomes
            .iter()
            .filter(|o| o.status == PointStatus::Ok)
            .filter_map(|o| o.samples_per_s.map(|s| (o.batch, s * (1.0 + share(o)))))
            .collect();
        ok.sort_by_key(|o| o.0);
        ok
    }

    /// Whether the largest fitting batch gained less than [`PLATEAU_GAIN`] in throughput over the
    /// largest one at most half its size (the last doubling), while that one gained less than
    /// [`SATURATING_GAIN`] over its own half: diminishing returns twice in a row, so one noisy
    /// point in the launch-bound range (where a doubling nearly doubles throughput) is not
    /// taken for the knee.
    fn plateau(&self) -> bool {
        let ok = self.throughputs();
        let Some(&(top, at_top)) = ok.last() else {
            return false;
        };
        let below = |batch: u32| ok.iter().rev().find(|(b, _)| b.saturating_mul(2) <= batch);
        let Some(&(half, at_half)) = below(top) else {
            return false;
        };
        let flat = at_half > 0.0 && at_top < at_half * (1.0 + PLATEAU_GAIN);
        let saturating = below(half)
            .is_none_or(|&(_, at_quarter)| at_half < at_quarter * (1.0 + SATURATING_GAIN));
        flat && saturating
    }

    /// Whether the last two steps between fitting points (ascending) each grew throughput in
    /// proportion to the batch, within [`LINEAR_SCALING`]: a flat step time.
    fn launch_bound(&self) -> bool {
        let ok = self.throughputs();
        let n = ok.len();
        if n < 3 {
            return false;
        }
        ok[n - 3..].windows(2).all(|w| {
            let (b0, s0) = w[0];
            let (b1, s1) = w[1];
            s0 > 0.0 && s1 / s0 >= LINEAR_SCALING * f64::from(b1) / f64::from(b0)
        })
    }

    /// The batch the memory line points to above the fitting batch `good`: 1 % below the largest
    /// predicted to fit (measured peaks step with the allocator's block sizes, so aiming at the
    /// line itself lands just over it about half the time), or — when that is within the
    /// tolerance of `good` — the first batch beyond the tolerance (refused on prediction, which
    /// ends the search). Below a failing `bad` batch; a
    /// device OOM (no measured peak) keeps it a quarter of the gap below, so a line that is off
    /// near the device's limit still narrows the gap geometrically.
    fn guided(&self, good: u32, bad: Option<u32>, max: u32) -> Option<u32> {
        let line_fit = self.predicted_fit()?;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let aim = if self.costly {
            COSTLY_AIM
        } else {
            BISECT_TOLERANCE / 2.0
        };
        let fit = (f64::from(line_fit) * (1.0 - aim)).floor() as u32;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let tol = ((f64::from(good) * BISECT_TOLERANCE).floor() as u32).max(1);
        let c = if fit <= good.saturating_add(tol) {
            good.saturating_add(tol)
        } else {
            fit
        };
        let hi = match bad {
            None => max,
            Some(b) => {
                let measured = self
                    .outcomes
                    .iter()
                    .any(|o| o.batch == b && o.peak.is_some());
                if measured {
                    b - 1
                } else {
                    b - ((b - good) / 4).max(1)
                }
            }
        };
        let c = c.min(hi);
        (c > good && bad.is_none_or(|b| c < b)).then_some(c)
    }

    /// The next step of the sweep.
    pub fn next_step(&mut self) -> Next {
        if let Some(limit) = self.done {
            return Next::Done { limit };
        }
        self.probe = None;
        let candidate = match &self.plan {
            BatchPlan::Explicit { batches } => self.next_explicit(batches.clone()),
            BatchPlan::Search { start, max } if self.costly => {
                self.next_costly(*start, *max).map(|(batch, probe)| {
                    self.probe = probe.then_some(batch);
                    batch
                })
            }
            BatchPlan::Search { start, max } => self.next_search(*start, *max),
        };
        match candidate {
            Err(limit) => {
                self.done = Some(limit);
                Next::Done { limit }
            }
            Ok(batch) => {
                let predicted = self.predict_peak(batch);
                match predicted {
                    Some(p) if self.predict && p > self.budget => Next::Skip {
                        batch,
                        predicted: p,
                    },
                    _ => Next::Run { batch, predicted },
                }
            }
        }
    }

    fn tried(&self, batch: u32) -> bool {
        self.outcomes.iter().any(|o| o.batch == batch)
    }

    fn failure_limit(&self) -> Option<Limit> {
        self.outcomes
            .iter()
            .find(|o| o.status != PointStatus::Ok)
            .map(|o| match o.status {
                PointStatus::Oom => Limit::Oom,
                PointStatus::OverBudget => Limit::Budget,
                _ => Limit::Error,
            })
    }

    fn next_explicit(&self, batches: Vec<u32>) -> Result<u32, Limit> {
        if let Some(limit) = self.failure_limit() {
            return Err(limit);
        }
        batches
            .into_iter()
            .find(|b| !self.tried(*b))
            .ok_or(Limit::List)
    }

    /// The largest batch that fitted and the smallest that did not, so far.
    fn bounds(&self) -> (Option<u32>, Option<u32>) {
        let good = self
            .outcomes
            .iter()
            .filter(|o| o.status == PointStatus::Ok)
            .map(|o| o.batch)
            .max();
        let bad = self
            .outcomes
            .iter()
            .filter(|o| o.status != PointStatus::Ok)
            .map(|o| o.batch)
            .min();
        (good, bad)
    }

    fn next_search(&self, start: u32, max: u32) -> Result<u32, Limit> {
        let start = start.clamp(1, max.max(1));
        let (good, bad) = self.bounds();
        match (good, bad) {
            (None, None) => Ok(start),
            (None, Some(_)) => Err(self.failure_limit().unwrap_or(Limit::Error)),
            (Some(g), None) => {
                if g >= max {
                    return Err(Limit::MaxBatch);
                }
                let double = g.saturating_mul(2).min(max);
                if self.predict && self.plateau() {
                    return Ok(self.guided(g, None, max).unwrap_or(double));
                }
                if self.predict && self.launch_bound() {
                    return Ok(g.saturating_mul(4).min(max));
                }
                Ok(double)
            }
            (Some(g), Some(b)) => {
                let gap = b.saturating_sub(g);
                let tolerance = (f64::from(g) * BISECT_TOLERANCE).max(1.0);
                if f64::from(gap) <= tolerance {
                    return Err(self.failure_limit().unwrap_or(Limit::Error));
                }
                let mid = g + gap / 2;
                if self.predict {
                    return Ok(self.guided(g, Some(b), max).unwrap_or(mid));
                }
                Ok(mid)
            }
        }
    }
}

impl Planner {
    /// Whether a start at `offered` (begun ahead) serves for the batch `wanted` that
    /// [`Planner::next_step`] just asked for: the same batch, or — where `wanted` is a knee probe,
    /// which only has to land between its neighbours — one within [`PROBE_SLACK`] of it,
    /// between the bounds so far, not yet tried and predicted within the budget.
    pub fn accepts(&self, wanted: u32, offered: u32) -> bool {
        if offered == wanted {
            return true;
        }
        if self.probe != Some(wanted) || self.tried(offered) {
            return false;
        }
        let (good, bad) = self.bounds();
        let near = (f64::from(offered) / f64::from(wanted) - 1.0).abs() <= PROBE_SLACK;
        near && good.is_none_or(|g| offered > g)
            && bad.is_none_or(|b| offered < b)
            && self.predict_peak(offered).is_none_or(|p| p <= self.budget)
    }

    /// The largest batch the memory line puts within the budget when no start verified it: the
    /// search upward ended below it (the knee was found beneath) and the batch past it was
    /// refused on its prediction. `None` when a start ran at or near it, or failed.
    pub fn unverified_fit(&self) -> Option<u32> {
        if !self.costly {
            return None;
        }
        let (good, bad) = self.bounds();
        let fit = self.predicted_fit()?;
        let refused_past = bad.is_some_and(|b| {
            b > fit
                && self.outcomes.iter().all(|o| {
                    o.status == PointStatus::Ok
                        || (o.status == PointStatus::OverBudget && o.peak.is_none())
                })
        });
        let below = good
            .is_some_and(|g| f64::from(g) < f64::from(fit) * (1.0 - COSTLY_AIM - BISECT_TOLERANCE));
        (refused_past && below).then_some(fit)
    }

    /// The growth of throughput per doubling of the batch from the fitting batch below `top` to
    /// `top` (0.1: 10 % a doubling).
    fn gain_per_doubling(&self, top: u32) -> Option<f64> {
        let ok = self.throughputs();
        let at_top = ok.iter().find(|o| o.0 == top)?.1;
        let &(below, at_below) = ok.iter().rev().find(|o| o.0 < top)?;
        let doublings = (f64::from(top) / f64::from(below)).log2();
        (at_below > 0.0 && doublings > 0.0).then(|| (at_top / at_below).powf(1.0 / doublings) - 1.0)
    }

    /// Whether the largest fitting batch `top` bought no speed worth its memory: it is not
    /// [`KNEE_SHARE`] faster than the best batch below it (that batch's figure raised by its
    /// noise, [`Planner::noisy`]), so the knee lies below and `top` bounds it from above.
    fn bent(&self, top: u32) -> bool {
        let ok = self.throughputs();
        let Some(at_top) = ok.iter().find(|o| o.0 == top).map(|o| o.1) else {
            return false;
        };
        // The best below, up to what its noise allows: a batch no faster than a noisy point's
        // figure could be has not shown a gain.
        let best_below = self
            .raised_throughputs()
            .iter()
            .filter(|o| o.0 < top)
            .map(|o| o.1)
            .fold(f64::NAN, f64::max);
        !best_below.is_nan() && at_top * KNEE_SHARE < best_below
    }

    /// The batch just past the line's fit (above the fitting `g`, at most `max`): refused on its
    /// prediction, it ends the search upward.
    fn past_fit(&self, g: u32, max: u32) -> Option<u32> {
        self.predicted_fit()
            .map(|f| f.saturating_add(1).max(g.saturating_add(1)).min(max))
            .filter(|b| *b > g)
    }

    /// Upward from the largest fitting batch `g` (nothing failed, the line's fit not reached):
    /// a knee probe halfway to the fit in the log, the fit itself, or — once the knee is
    /// below `g` — the batch past the line's fit, refused on its prediction. With the flag: a
    /// probe.
    fn upward(&self, g: u32, max: u32) -> Option<(u32, bool)> {
        let Some(fit) = self.guided(g, None, max) else {
            return Some((g.saturating_mul(4).min(max), false));
        };
        // The two small points alone never bend the curve: on a loaded machine 16 and 64 can
        // run equally fast while the batches above still gain, so the knee is judged only once
        // a probe has run.
        if self.throughputs().len() > 2 && self.bent(g) {
            // Only to be refused: a largest batch allowed below the fit is not run either.
            return self
                .past_fit(g, max)
                .filter(|b| self.predict_peak(*b).is_some_and(|p| p > self.budget))
                .map(|b| (b, false));
        }
        let ratio = f64::from(fit) / f64::from(g);
        let far = ratio > FAST_PROBE_RATIO;
        let slow = ratio >= PROBE_RATIO && self.gain_per_doubling(g).is_some_and(|x| x < SLOW_GAIN);
        if far || slow {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let mid = (f64::from(g) * f64::from(fit)).sqrt().round() as u32;
            if mid > g && mid < fit {
                return Some((mid, true));
            }
        }
        Some((fit, false))
    }

    fn next_costly(&self, start: u32, max: u32) -> Result<(u32, bool), Limit> {
        let start = start.clamp(1, max.max(1));
        let (good, bad) = self.bounds();
        let fitting = self
            .outcomes
            .iter()
            .filter(|o| o.status == PointStatus::Ok)
            .count();
        let upper = match (good, bad) {
            (None, None) => return Ok((start, false)),
            (None, Some(_)) => return Err(self.failure_limit().unwrap_or(Limit::Error)),
            // The second small point: four times the first, so the line's slope is measured
            // over a span the allocator's block sizes do not dominate.
            (Some(g), None) if fitting == 1 && g < max => {
                return Ok((g.saturating_mul(4).min(max), false));
            }
            (Some(g), None) if g >= max => None,
            // The verified jump landed within the aim of the line's fit: the batch just past
            // the fit is refused on its prediction, and the search upward is over.
            (Some(g), None)
                if self.predicted_fit().is_some_and(|f| {
                    f64::from(g) >= f64::from(f) * (1.0 - COSTLY_AIM - BISECT_TOLERANCE)
                }) =>
            {
                self.past_fit(g, max)
            }
            (Some(g), None) => match self.upward(g, max) {
                Some((b, true)) if !self.tried(b) => return Ok((b, true)),
                other => other.map(|o| o.0),
            },
            (Some(g), Some(b)) => {
                let tolerance = (f64::from(g) * BISECT_TOLERANCE).max(1.0);
                // Refused on its prediction (over budget, never run): the line has spoken.
                let refused = self.outcomes.iter().any(|o| {
                    o.batch == b && o.status == PointStatus::OverBudget && o.peak.is_none()
                });
                // The line through the measured points puts the fit within the aim of `g`:
                // another start between them would land within the memory's noise of the
                // budget (on a loaded machine it went over), so the batch just past the fit is
                // refused on its prediction instead, as after a verified jump.
                let past_fit = self
                    .predicted_fit()
                    .filter(|f| {
                        f64::from(g) >= f64::from(*f) * (1.0 - COSTLY_AIM - BISECT_TOLERANCE)
                    })
                    .and_then(|_| self.past_fit(g, max))
                    .filter(|c| *c < b && !self.tried(*c));
                if refused || f64::from(b.saturating_sub(g)) <= tolerance {
                    None
                } else if past_fit.is_some() {
                    past_fit
                } else if self
                    .outcomes
                    .iter()
                    .any(|o| o.batch == b && o.peak.is_some())
                    // A line that still has `b` fitting does not explain why it failed.
                    && self.predicted_fit().is_some_and(|f| f < b)
                {
                    Some(self.guided(g, Some(b), max).unwrap_or(g + (b - g) / 2))
                } else {
                    // Out of memory with no peak measured: the line does not know where the
                    // device ends, so halve the gap in the log of the batch.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let mid = (f64::from(g) * f64::from(b)).sqrt().round() as u32;
                    Some(mid.clamp(g + 1, b - 1))
                }
            }
        };
        if let Some(next) = upper.filter(|b| !self.tried(*b)) {
            return Ok((next, false));
        }
        // The largest fitting batch is known: narrow the knee.
        if let Some(next) = self.knee_gap().filter(|b| !self.tried(*b)) {
            return Ok((next, true));
        }
        Err(self.failure_limit().unwrap_or(Limit::MaxBatch))
    }

    /// The batch halfway (in the log) between the knee and the largest fitting batch below it
    /// when they are more than [`COSTLY_KNEE_RATIO`] apart.
    ///
    /// The knee is judged as the summary names it: a batch whose figure, raised by its own
    /// noise ([`Planner::noisy`]), reaches [`KNEE_SHARE`] of the best.
    fn knee_gap(&self) -> Option<u32> {
        let ok = self.throughputs();
        let best = ok.iter().map(|o| o.1).fold(f64::NAN, f64::max);
        if best.is_nan() {
            return None;
        }
        let knee = self
            .raised_throughputs()
            .into_iter()
            .find(|o| o.1 >= best * KNEE_SHARE)?
            .0;
        let below = ok.iter().rev().find(|o| o.0 < knee)?.0;
        if f64::from(knee) / f64::from(below) <= COSTLY_KNEE_RATIO {
            return None;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let mid = (f64::from(knee) * f64::from(below)).sqrt().round() as u32;
        (mid > below && mid < knee).then_some(mid)
    }
}

fn to_f64(v: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let f = v as f64;
    f
}

#[cfg(test)]
mod tests;
