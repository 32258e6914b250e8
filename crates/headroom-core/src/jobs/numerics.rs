//! `headroom numerics --workload W` as a job: starts the worker on a [`NumericsRequest`] and
//! records the comparison as a `numerics` run whose report is the [`NumericsReport`], with its
//! verdict as the note; `decide` reads the newest.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sweep::{CancelToken, JobError};
use crate::ledger::Ledger;
use crate::protocol::{Event, Hello, Job, NumericsRequest};
use crate::CoreError;
use headroom_model::numerics::NumericsReport;

/// Everything a comparison produced (the CLI's `--json` document).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumericsOutcome {
    /// How the run ended; `error` (and no `run_id`) when nothing was recorded.
    pub status: super::JobStatus,
    pub run_id: Option<i64>,
    pub hello: Option<Hello>,
    pub report: Option<NumericsReport>,
    /// The report's verdict in one sentence.
    pub verdict: Option<String>,
    pub error: Option<JobError>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Runs `req` with a worker from `exe`, recording it in `ledger`.
pub fn run_numerics(
    exe: &Path,
    req: &NumericsRequest,
    ledger: &Ledger,
    cancel: &CancelToken,
) -> Result<NumericsOutcome, CoreError> {
    let mut got = super::OneReport::collect(
        exe,
        &Job::Numerics(req.clone()),
        crate::ledger::RunKind::Numerics,
        ledger,
        cancel,
        |e| match e {
            Event::Numerics(r) => Some(r),
            _ => None,
        },
    )?;
    let verdict = got.report.as_ref().map(NumericsReport::verdict);
    let status = got.close(ledger, verdict.clone())?;
    Ok(NumericsOutcome {
        status,
        run_id: got.run_id,
        hello: got.hello,
        report: got.report,
        verdict,
        error: got.error,
        warnings: got.warnings,
    })
}
