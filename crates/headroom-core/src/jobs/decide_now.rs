//! The decision table now: the configuration, the ledger's facts and a fresh contention sample
//! put through [`crate::decide::decide`]. What `headroom decide` prints and what the app's
//! Overview shows (and paints on the tray) are this one function's result.

use serde::Serialize;

use crate::config::Config;
use crate::contention::{ContentionReport, Sampler};
use crate::decide::{decide, Decision, Facts};
use crate::CoreError;

/// One recomputation of the decision.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionNow {
    pub decision: Decision,
    pub facts: Facts,
    pub contention: ContentionReport,
    /// Seconds until the next contention sample, from the configuration.
    pub interval_s: u64,
}

/// Decides now, with `sampler` (kept between calls, so swap growth is seen). Whatever goes wrong
/// is returned beside the decision rather than instead of it: an unreadable configuration gives
/// the defaults, a damaged or unwritable ledger gives no measured facts (the contention sample
/// and the configuration still decide), and the first such problem is the second value.
/// With `project`, the user's runs (wrapped runs, script sweeps) are that project's only.
pub fn now(sampler: &mut Sampler, project: Option<&str>) -> (DecisionNow, Option<CoreError>) {
    let mut problem = None;
    let config = crate::config::load().unwrap_or_else(|e| {
        problem = Some(e);
        Config::default()
    });
    // The ledger's recent runs are read once a tick, for the need and for the facts.
    let ledger =
        super::open_ledger().and_then(|l| crate::evidence::recent_runs(&l).map(|r| (l, r)));
    let (need, training) = match &ledger {
        Ok((l, recent)) => (
            crate::evidence::need_in(l, recent).ok().flatten(),
            crate::evidence::training_pids(l).unwrap_or_default(),
        ),
        Err(_) => (None, Vec::new()),
    };
    let contention = sampler.sample(&config.contention, &training, need);
    let facts = ledger
        .and_then(|(l, recent)| {
            crate::evidence::gather_in(&l, &recent, &config, Some(&contention), project)
        })
        .unwrap_or_else(|e| {
            problem.get_or_insert(e);
            Facts {
                contention: contention.reasons.clone(),
                ..Facts::default()
            }
        });
    let now = DecisionNow {
        decision: decide(&facts, &config.decide),
        facts,
        contention,
        interval_s: config.contention.interval_s,
    };
    (now, problem)
}
