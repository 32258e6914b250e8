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
pub mod run;
pub mod sweep;
pub mod watch;
pub mod worker;

/// Opens the ledger and closes the runs of this host whose headroom process died mid-run.
pub fn open_ledger() -> anyhow::Result<headroom_core::ledger::Ledger> {
    use anyhow::Context;
    headroom_core::jobs::open_ledger().context("cannot open the ledger")
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
    pub fn input(&self) -> headroom_core::requests::WorkloadInput {
        headroom_core::requests::WorkloadInput {
            workload: self.workload.clone(),
            input_shape: self.input_shape.clone(),
            device: self.device.clone(),
            dtype: self.dtype.clone(),
        }
    }
}
