//! The sweep planner: which batch to run next. It doubles the batch until the device runs out of
//! memory, the budget is reached or the maximum batch is passed, then bisects between the last
//! batch that fitted and the first that did not. Before each point it predicts the peak memory
//! from the points already measured (linear in the batch) and refuses points predicted over budget.
//! Pure: it never runs anything, the worker feeds it outcomes.

use crate::protocol::{BatchPlan, PointStatus};

/// Bisection stops when the gap between fitting and failing batches is at most this share of
/// the fitting batch (or 1).
pub const BISECT_TOLERANCE: f64 = 0.02;

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
        }
    }

    /// Records how the point at `batch` ended and its measured peak (if any).
    pub fn record(&mut self, batch: u32, status: PointStatus, peak: Option<u64>) {
        self.outcomes.push(Outcome {
            batch,
            status,
            peak,
        });
        if status == PointStatus::Error {
            self.done = Some(Limit::Error);
        }
    }

    /// Predicted peak bytes at `batch`, from the measured points: the line through the two
    /// largest fitting points, or through the baseline and the only one.
    pub fn predict_peak(&self, batch: u32) -> Option<u64> {
        let mut ok: Vec<(f64, f64)> = self
            .outcomes
            .iter()
            .filter(|o| o.status == PointStatus::Ok)
            .filter_map(|o| o.peak.map(|p| (f64::from(o.batch), to_f64(p))))
            .collect();
        ok.sort_by(|a, b| a.0.total_cmp(&b.0));
        ok.dedup_by(|a, b| a.0 == b.0);
        let (p0, p1) = match ok.as_slice() {
            [] => return None,
            [only] => ((0.0, to_f64(self.baseline?)), *only),
            [.., a, b] => (*a, *b),
        };
        let slope = ((p1.1 - p0.1) / (p1.0 - p0.0)).max(0.0);
        let v = p1.1 + slope * (f64::from(batch) - p1.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(v.max(0.0) as u64)
    }

    /// The next step of the sweep.
    pub fn next_step(&mut self) -> Next {
        if let Some(limit) = self.done {
            return Next::Done { limit };
        }
        let candidate = match &self.plan {
            BatchPlan::Explicit { batches } => self.next_explicit(batches.clone()),
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

    fn next_search(&self, start: u32, max: u32) -> Result<u32, Limit> {
        let start = start.clamp(1, max.max(1));
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
        match (good, bad) {
            (None, None) => Ok(start),
            (None, Some(_)) => Err(self.failure_limit().unwrap_or(Limit::Error)),
            (Some(g), None) => {
                if g >= max {
                    return Err(Limit::MaxBatch);
                }
                Ok(g.saturating_mul(2).min(max))
            }
            (Some(g), Some(b)) => {
                let gap = b.saturating_sub(g);
                let tolerance = (f64::from(g) * BISECT_TOLERANCE).max(1.0);
                if f64::from(gap) <= tolerance {
                    return Err(self.failure_limit().unwrap_or(Limit::Error));
                }
                Ok(g + gap / 2)
            }
        }
    }
}

fn to_f64(v: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let f = v as f64;
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a planner against a synthetic device whose peak is `base + per * batch` and that
    /// runs out of memory above `capacity`; returns the batches run and how it ended.
    fn drive(
        plan: BatchPlan,
        budget: u64,
        capacity: u64,
        predict: bool,
    ) -> (Vec<u32>, Vec<u32>, Limit) {
        let (base, per) = (1000_u64, 100_u64);
        let mut p = Planner::new(plan, budget, Some(base), predict);
        let (mut ran, mut skipped) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            match p.next_step() {
                Next::Run { batch, .. } => {
                    ran.push(batch);
                    let peak = base + per * u64::from(batch);
                    let status = if peak > capacity {
                        PointStatus::Oom
                    } else if peak > budget {
                        PointStatus::OverBudget
                    } else {
                        PointStatus::Ok
                    };
                    p.record(batch, status, (status != PointStatus::Oom).then_some(peak));
                }
                Next::Skip { batch, .. } => {
                    skipped.push(batch);
                    p.record(batch, PointStatus::OverBudget, None);
                }
                Next::Done { limit } => return (ran, skipped, limit),
            }
        }
        panic!("planner did not finish");
    }

    #[test]
    fn doubles_then_bisects_to_within_two_percent_of_the_budget() {
        // Budget fits batch (100_000 - 1000) / 100 = 990.
        let (ran, skipped, limit) = drive(
            BatchPlan::Search {
                start: 1,
                max: 1 << 20,
            },
            100_000,
            u64::MAX,
            true,
        );
        assert_eq!(limit, Limit::Budget);
        assert_eq!(&ran[..4], &[1, 2, 4, 8]);
        let best_fit = ran
            .iter()
            .copied()
            .filter(|b| 1000 + 100 * u64::from(*b) <= 100_000)
            .max();
        let best_fit = best_fit.unwrap_or(0);
        assert!(
            best_fit <= 990 && f64::from(best_fit) >= 990.0 * 0.98,
            "found {best_fit}"
        );
        // Prediction is exact on a linear device, so nothing over budget was ever run.
        assert!(
            ran.iter().all(|b| 1000 + 100 * u64::from(*b) <= 100_000),
            "ran {ran:?}"
        );
        assert!(!skipped.is_empty());
    }

    #[test]
    fn oom_bounds_the_search_when_prediction_is_off() {
        let (ran, _, limit) = drive(
            BatchPlan::Search {
                start: 1,
                max: 4096,
            },
            u64::MAX,
            30_000,
            false,
        );
        assert_eq!(limit, Limit::Oom);
        assert!(ran.contains(&512), "{ran:?}");
        let fit = ran
            .iter()
            .copied()
            .filter(|b| 1000 + 100 * u64::from(*b) <= 30_000)
            .max()
            .unwrap_or(0);
        assert!((284..=290).contains(&fit), "found {fit}");
    }

    #[test]
    fn max_batch_is_visited_exactly() {
        let (ran, skipped, limit) = drive(
            BatchPlan::Search { start: 4, max: 100 },
            u64::MAX,
            u64::MAX,
            true,
        );
        assert_eq!(ran, vec![4, 8, 16, 32, 64, 100]);
        assert!(skipped.is_empty());
        assert_eq!(limit, Limit::MaxBatch);
    }

    #[test]
    fn explicit_list_stops_at_first_failure() {
        let plan = BatchPlan::Explicit {
            batches: vec![1, 10, 100, 1000],
        };
        let (ran, skipped, limit) = drive(plan, 50_000, u64::MAX, true);
        assert_eq!(ran, vec![1, 10, 100]);
        assert_eq!(skipped, vec![1000]);
        assert_eq!(limit, Limit::Budget);
    }

    #[test]
    fn first_point_failing_ends_the_sweep() {
        let (ran, _, limit) = drive(BatchPlan::Search { start: 1, max: 64 }, 500, u64::MAX, true);
        assert_eq!(ran, vec![1]);
        assert_eq!(limit, Limit::Budget);
    }

    #[test]
    fn an_error_ends_the_sweep() {
        let mut p = Planner::new(BatchPlan::Search { start: 1, max: 64 }, 100, None, true);
        assert_eq!(
            p.next_step(),
            Next::Run {
                batch: 1,
                predicted: None
            }
        );
        p.record(1, PointStatus::Error, None);
        assert_eq!(
            p.next_step(),
            Next::Done {
                limit: Limit::Error
            }
        );
    }
}
