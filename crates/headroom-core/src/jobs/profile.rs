//! `headroom profile` as a job: starts the worker on a [`ProfileRequest`] and records what it
//! found — the step split and the per-layer times — as a `profile` run.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sweep::{CancelToken, JobError};
use crate::ledger::Ledger;
use crate::protocol::{Event, Hello, Job, ProfileReport, ProfileRequest};
use crate::CoreError;

/// Everything a profile produced (the CLI's `--json` document).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileOutcome {
    /// How the run ended; `error` (and no `run_id`) when nothing was recorded.
    pub status: super::JobStatus,
    pub run_id: Option<i64>,
    pub hello: Option<Hello>,
    pub report: Option<ProfileReport>,
    /// The slow layer's sentence, when one layer stands out (see [`ProfileReport::slow_layer`]).
    pub slow_layer: Option<String>,
    pub error: Option<JobError>,
    /// What the worker warned of (the thread count it fitted to the free cores).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The sentence for a slow layer at `share` of the forward time or more.
pub fn slow_layer_line(r: &ProfileReport, share: f64) -> Option<String> {
    let l = r.slow_layer(share)?;
    let flops = l.flops_share.map_or_else(
        || "its FLOPs are not known".to_owned(),
        |f| format!("{:.1} % of the FLOPs", f * 100.0),
    );
    Some(format!(
        "one layer is slow: {} takes {:.0} % of the forward time ({:.2} ms at batch {}) for {flops} — \
         a kernel gap on this backend? profile that layer",
        l.name,
        l.time_share * 100.0,
        l.forward_ms,
        r.batch
    ))
}

/// Runs `req` with a worker from `exe`, recording it in `ledger`.
pub fn run_profile(
    exe: &Path,
    req: &ProfileRequest,
    slow_share: f64,
    ledger: &Ledger,
    cancel: &CancelToken,
) -> Result<ProfileOutcome, CoreError> {
    let mut got = super::OneReport::collect(
        exe,
        &Job::Profile(req.clone()),
        crate::ledger::RunKind::Profile,
        ledger,
        cancel,
        |e| match e {
            Event::Profile(r) => Some(r),
            _ => None,
        },
    )?;
    let slow_layer = got
        .report
        .as_ref()
        .and_then(|r| slow_layer_line(r, slow_share));
    let note = slow_layer.clone().or_else(|| {
        got.report.as_ref().map(|r| {
            format!(
                "{} layers timed at batch {}, none slow",
                r.layers.len(),
                r.batch
            )
        })
    });
    let status = got.close(ledger, note)?;
    Ok(ProfileOutcome {
        status,
        run_id: got.run_id,
        hello: got.hello,
        report: got.report,
        slow_layer,
        error: got.error,
        warnings: got.warnings,
    })
}
