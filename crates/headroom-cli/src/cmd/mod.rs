//! One module per command.

pub mod config;
pub mod contention;
pub mod decide;
pub mod doctor;
pub mod epochs;
pub mod ledger;
pub mod profile;
pub mod project;
pub mod record;
pub mod remote;
pub mod remote_runs;
pub mod run;
pub mod runs;
pub mod sweep;
pub mod watch;
pub mod worker;

/// Opens the ledger and closes the runs of this host whose headroom process died mid-run.
pub fn open_ledger() -> anyhow::Result<headroom_store::ledger::Ledger> {
    use anyhow::Context;
    headroom_core::jobs::open_ledger().context("cannot open the ledger")
}

/// Opens the ledger for a command that wraps the user's own training (`run`, `watch`): a write
/// the ledger refuses (a lock, a full disk) is kept and retried instead of ending the command,
/// and a ledger that cannot be opened at all still lets the command run (its records wait for
/// the end, then go to the ledger or to a spill file beside it).
pub fn open_ledger_for_training() -> anyhow::Result<headroom_store::ledger::Ledger> {
    let path = headroom_store::paths::ledger_path()?;
    Ok(headroom_core::jobs::open_ledger_keeping(&path, true)?)
}

/// Opens the ledger for one of Headroom's own measurements (`sweep`, `epochs`): it must open,
/// and then a write it refuses mid-run is kept and retried instead of throwing the run away.
pub fn open_ledger_keeping() -> anyhow::Result<headroom_store::ledger::Ledger> {
    let ledger = open_ledger()?;
    ledger.keep_going(true);
    Ok(ledger)
}

/// Ends a command that kept going: says what became of the records the ledger refused; an
/// error when some could be kept nowhere.
pub fn settle_ledger(ledger: &headroom_store::ledger::Ledger) -> anyhow::Result<()> {
    let s = ledger.settle();
    if s.nothing_lost() {
        if let Some(m) = s.message() {
            eprintln!("headroom: {m}");
        }
        return Ok(());
    }
    anyhow::bail!(
        "{}",
        s.message()
            .unwrap_or_else(|| "records of this run are not in the ledger".into())
    )
}

/// The end of a worker job (`epochs`, `profile`, `numerics --workload`): in text, its error and
/// the run it was recorded as; under `--json` (whose document carries both) its error only when
/// nothing was recorded. The exit code: 0 complete, 2 nothing recorded, 3 recorded but not
/// complete.
pub(crate) fn job_exit(
    run_id: Option<i64>,
    status: headroom_core::jobs::JobStatus,
    error: Option<&headroom_core::jobs::sweep::JobError>,
    json: bool,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    if let Some(e) = error.filter(|_| !json || run_id.is_none()) {
        eprintln!("headroom: error: {}", e.message);
    }
    if let (Some(id), false) = (run_id, json) {
        println!("recorded as run {id} ({status})");
    }
    match (run_id, status) {
        (Some(_), headroom_core::jobs::JobStatus::Complete) => ExitCode::SUCCESS,
        (None, _) => ExitCode::from(2),
        _ => ExitCode::from(3),
    }
}

/// What to run and where: shared by `sweep` and `epochs`.
#[derive(Debug, clap::Args)]
pub struct WorkloadArgs {
    /// auto, cpu, mps, cuda or cuda:N.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// mlp, cnn, vit-tiny, gpt-tiny, matmul, or a TorchScript file (model.pt).
    #[arg(long, default_value = "mlp")]
    pub workload: String,
    /// One sample's shape without the batch, e.g. 3x224x224 (required for a TorchScript file).
    #[arg(long)]
    input_shape: Option<String>,
    /// f32, f16 or bf16.
    #[arg(long, default_value = "f32")]
    dtype: String,
}

impl WorkloadArgs {
    /// The arguments as the core's workload input (the app's forms fill the same one).
    pub fn input(&self) -> headroom_model::requests::WorkloadInput {
        headroom_model::requests::WorkloadInput {
            workload: self.workload.clone(),
            input_shape: self.input_shape.clone(),
            device: self.device.clone(),
            dtype: self.dtype.clone(),
        }
    }
}
