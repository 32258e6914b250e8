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
    /// What the worker warned of (the thread count it fitted to the free cores), and what the
    /// conditions say may have skewed an epoch (throttling, battery, Low Power Mode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The machine's state from the worker's start to its last epoch: thermal state, power
    /// source, power and energy where the platform gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub conditions: Option<crate::conditions::TimedConditions>,
    /// Each epoch's, in the order of `samples` (each also kept in the ledger as the run's
    /// `epoch_conditions` sample).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub epoch_conditions: Vec<crate::conditions::TimedConditions>,
}

/// The kind of ledger sample an epoch's conditions are kept as (its sequence:
/// [`crate::ledger::EPOCH_CONDITIONS_SEQ`] plus the epoch).
pub const EPOCH_CONDITIONS: &str = "epoch_conditions";

/// Joules per sample over an epoch: its energy over the samples it trained.
pub fn epoch_joules_per_sample(
    s: &EpochSample,
    c: &crate::conditions::TimedConditions,
) -> Option<f64> {
    c.joules_per_sample(s.samples_per_s? * s.seconds)
}

/// Runs `req` with a worker from `exe`, recording it in `ledger`; `on` sees each epoch with the
/// machine's state while it ran (where it was read).
pub fn run_epochs(
    exe: &Path,
    req: &EpochsRequest,
    thresholds: &EpochThresholds,
    ledger: &Ledger,
    cancel: &CancelToken,
    on: &mut dyn FnMut(&EpochSample, Option<&crate::conditions::TimedConditions>),
) -> Result<EpochsOutcome, CoreError> {
    let mut out = EpochsOutcome {
        status: super::JobStatus::Running,
        run_id: None,
        hello: None,
        samples: Vec::new(),
        verdict: None,
        error: None,
        warnings: Vec::new(),
        conditions: None,
        epoch_conditions: Vec::new(),
    };
    // Read from the worker's hello (its device known) to its last epoch; each epoch from the
    // end of the one before.
    let mut conditions: Option<crate::conditions::ConditionLog> = None;
    let (mut began, mut from) = (0.0, 0.0);
    let job = Job::Epochs(req.clone());
    let mut worker = Worker::start(exe, &job)?;
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
                    super::JobShape::of(&job),
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
                let log = crate::conditions::ConditionLog::start(
                    Some(&h.device),
                    crate::conditions::INTERVAL,
                );
                began = log.mark();
                from = began;
                conditions = Some(log);
                out.hello = Some(h);
            }
            Event::Epoch(s) => {
                let span = conditions.as_ref().map(|c| {
                    let to = c.mark();
                    let mut span = c.span(from, to);
                    span.unavailable.clear();
                    from = to;
                    span
                });
                if let Some(id) = out.run_id {
                    ledger.add_sample(id, s.epoch, "epoch", &s)?;
                    if let Some(c) = &span {
                        ledger.add_sample(
                            id,
                            crate::ledger::EPOCH_CONDITIONS_SEQ + s.epoch,
                            EPOCH_CONDITIONS,
                            c,
                        )?;
                    }
                }
                on(&s, span.as_ref());
                if let Some(c) = span {
                    out.epoch_conditions.push(c);
                }
                out.samples.push(s);
            }
            Event::Error { code, message } => out.error = Some(JobError { code, message }),
            Event::Warning { message } => out.warnings.push(message),
            _ => {}
        }
    }
    cancel.set_pid(None);
    if let Some(c) = conditions.take() {
        out.conditions = Some(c.span(began, from));
        drop(c.finish());
    }
    // A run that throttled names it once; else each epoch that did.
    let run_warnings = out
        .conditions
        .as_ref()
        .map(|c| c.warnings_for("this run"))
        .unwrap_or_default();
    if run_warnings.is_empty() {
        for (s, c) in out.samples.iter().zip(&out.epoch_conditions) {
            out.warnings
                .extend(c.warnings_for(&format!("epoch {}", s.epoch)));
        }
    } else {
        out.warnings.extend(run_warnings);
    }
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
