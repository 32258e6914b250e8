//! `headroom epochs` as a job: starts the worker on an [`EpochsRequest`], records each epoch in
//! the ledger the moment it arrives, and closes the run with the verdict on its samples.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::supervisor::{describe_exit, Output, Worker};
use super::sweep::{CancelToken, JobError};
use crate::epochs::{judge, EpochSample, EpochThresholds, EpochVerdict};
use crate::ledger::{Ledger, RunStatus};
use crate::protocol::{EpochsRequest, Event, Hello, Job};
use crate::CoreError;

/// Everything an epochs run produced (the CLI's `--json` document).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochsOutcome {
    /// How the run ended; `error` (and no `run_id`) when nothing was recorded.
    pub status: super::JobStatus,
    pub run_id: Option<i64>,
    pub hello: Option<Hello>,
    pub samples: Vec<EpochSample>,
    pub verdict: Option<EpochVerdict>,
    pub error: Option<JobError>,
    /// What the worker warned of (the thread count it fitted to the free cores).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Runs `req` with a worker from `exe`, recording it in `ledger`; `on` sees each epoch.
pub fn run_epochs(
    exe: &Path,
    req: &EpochsRequest,
    thresholds: &EpochThresholds,
    ledger: &Ledger,
    cancel: &CancelToken,
    on: &mut dyn FnMut(&EpochSample),
) -> Result<EpochsOutcome, CoreError> {
    let mut out = EpochsOutcome {
        status: super::JobStatus::Running,
        run_id: None,
        hello: None,
        samples: Vec::new(),
        verdict: None,
        error: None,
        warnings: Vec::new(),
    };
    let mut worker = Worker::start(exe, &Job::Epochs(req.clone()))?;
    cancel.set_pid(Some(worker.pid()));
    if cancel.is_cancelled() {
        cancel.cancel();
    }
    while let Some(o) = worker.next_output() {
        let Output::Event(e) = o else { continue };
        match *e {
            Event::Hello(h) => {
                out.run_id = Some(super::begin_worker_run(
                    ledger,
                    crate::ledger::RunKind::Epochs,
                    &h,
                    req.dtype,
                    serde_json::to_string(req)?,
                )?);
                if let Some(id) = out.run_id {
                    ledger.add_sample(
                        id,
                        crate::ledger::THRESHOLDS_SEQ,
                        "thresholds",
                        thresholds,
                    )?;
                }
                out.hello = Some(h);
            }
            Event::Epoch(s) => {
                if let Some(id) = out.run_id {
                    ledger.add_sample(id, s.epoch, "epoch", &s)?;
                }
                on(&s);
                out.samples.push(s);
            }
            Event::Error { code, message } => out.error = Some(JobError { code, message }),
            Event::Warning { message } => out.warnings.push(message),
            _ => {}
        }
    }
    cancel.set_pid(None);
    let (status, tail) = worker.wait()?;
    // No epoch measured (the device is not there, the worker died at its start): no verdict,
    // not even "too short to judge", for a run that never ran.
    out.verdict = (!out.samples.is_empty()).then(|| judge(&out.samples, thresholds));
    let complete = status.success() && out.samples.len() == req.epochs as usize;
    let (run_status, note) = if complete {
        (
            RunStatus::Complete,
            out.verdict.as_ref().map(|v| v.reason.clone()),
        )
    } else if out.error.is_some() && !cancel.is_cancelled() {
        (
            RunStatus::Failed,
            out.error.as_ref().map(|e| e.message.clone()),
        )
    } else {
        let why = if cancel.is_cancelled() {
            "interrupted".to_owned()
        } else {
            format!("the worker {}", describe_exit(&status))
        };
        let note =
            super::with_last_words(format!("{why} after {} epoch(s)", out.samples.len()), &tail);
        out.error = Some(JobError {
            code: crate::error::ErrorCode::Interrupted,
            message: note.clone(),
        });
        (RunStatus::Interrupted, Some(note))
    };
    out.status = super::close_worker_run(
        ledger,
        out.run_id,
        run_status,
        &serde_json::to_value(&out.verdict)?,
        note.as_deref(),
    )?;
    Ok(out)
}
