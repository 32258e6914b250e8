//! Facts gathered from the ledger for the live judgements (contention, the decision): what the
//! training run was measured to need, and which processes are Headroom's runs right now.

use crate::contention::Need;
use crate::ledger::{Ledger, RunStatus};
use crate::CoreError;

/// How many recent runs are searched for evidence.
const RECENT: u32 = 200;

/// The pids recording runs that are still going on this host (their trees are the training).
pub fn training_pids(ledger: &Ledger) -> Result<Vec<u32>, CoreError> {
    let mut pids = ledger.running_owners(&crate::jobs::hostname())?;
    pids.retain(|p| crate::jobs::process_alive(*p));
    Ok(pids)
}

/// The memory the training run was last measured to need on this host: the newest complete
/// sweep's chosen batch on the CPU or MPS (host memory), or the newest `run`'s peak.
pub fn measured_need(ledger: &Ledger) -> Result<Option<Need>, CoreError> {
    let host = crate::jobs::hostname();
    for run in ledger.list_runs(RECENT)? {
        if run.host != host || run.status != RunStatus::Complete {
            continue;
        }
        match run.kind.as_str() {
            "sweep" if matches!(run.device.as_str(), "cpu" | "mps") => {
                let Some(batch) = run.chosen_batch else {
                    continue;
                };
                let (_, points) = ledger.get_run(run.id)?;
                if let Some(bytes) = points
                    .iter()
                    .find(|p| p.batch == batch)
                    .and_then(|p| p.peak_bytes)
                {
                    return Ok(Some(Need {
                        bytes,
                        source: format!(
                            "the last sweep of {} on {} at batch {batch} (run {})",
                            run.workload, run.device, run.id
                        ),
                    }));
                }
            }
            "run" => {
                if let Some(bytes) = run.peak_bytes {
                    return Ok(Some(Need {
                        bytes,
                        source: format!("your last run (run {})", run.id),
                    }));
                }
            }
            _ => {}
        }
    }
    Ok(None)
}
