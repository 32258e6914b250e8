//! `headroom profile` as a job: starts the worker on a [`ProfileRequest`] and records what it
//! found — the step split and the per-layer times — as a `profile` run.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::supervisor::{describe_exit, Output, Worker};
use super::sweep::{CancelToken, JobError};
use crate::ledger::{Ledger, RunStatus};
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
    let mut out = ProfileOutcome {
        status: super::JobStatus::Running,
        run_id: None,
        hello: None,
        report: None,
        slow_layer: None,
        error: None,
        warnings: Vec::new(),
    };
    let mut worker = Worker::start(exe, &Job::Profile(req.clone()))?;
    cancel.set_pid(Some(worker.pid()));
    while let Some(o) = worker.next_output() {
        let Output::Event(e) = o else { continue };
        match *e {
            Event::Hello(h) => {
                out.run_id = Some(super::begin_worker_run(
                    ledger,
                    crate::ledger::RunKind::Profile,
                    &h,
                    req.dtype,
                    serde_json::to_string(req)?,
                )?);
                out.hello = Some(h);
            }
            Event::Profile(r) => out.report = Some(r),
            Event::Error { code, message } => out.error = Some(JobError { code, message }),
            Event::Warning { message } => out.warnings.push(message),
            _ => {}
        }
    }
    cancel.set_pid(None);
    let (status, tail) = worker.wait()?;
    out.slow_layer = out
        .report
        .as_ref()
        .and_then(|r| slow_layer_line(r, slow_share));
    let (run_status, note) = match (&out.report, &out.error) {
        (Some(r), _) => (
            RunStatus::Complete,
            out.slow_layer.clone().or_else(|| {
                Some(format!(
                    "{} layers timed at batch {}, none slow",
                    r.layers.len(),
                    r.batch
                ))
            }),
        ),
        (None, Some(e)) => (RunStatus::Failed, Some(e.message.clone())),
        (None, None) => {
            let note =
                super::with_last_words(format!("the worker {}", describe_exit(&status)), &tail);
            out.error = Some(JobError {
                code: crate::error::ErrorCode::Interrupted,
                message: note.clone(),
            });
            (RunStatus::Interrupted, Some(note))
        }
    };
    out.status = super::close_worker_run(
        ledger,
        out.run_id,
        run_status,
        &serde_json::to_value(&out.report)?,
        note.as_deref(),
    )?;
    Ok(out)
}
