//! What the decision stands on: the facts the core gathers from the ledger, the machine and the
//! configuration ([`Facts`]), one kind per source — sweeps, the user's runs, epochs, MLX,
//! fallbacks, slow layers, remote hosts.

use headroom_model::settings::WorkloadKind;
use serde::{Deserialize, Serialize};

use crate::table::Column;

/// MLX against Headroom's torch figure for one workload at one batch (`sweep --compare mlx`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlxFact {
    pub run_id: i64,
    pub workload: String,
    pub batch: u32,
    pub torch_device: String,
    pub torch_samples_per_s: f64,
    pub mlx_device: String,
    pub mlx_samples_per_s: f64,
}

/// A sweep's figure at one batch on one device.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepFact {
    pub run_id: i64,
    /// The device as the sweep named it when it is not a built-in sweep on MPS (a script's
    /// `--device-sweep` accelerator, `cuda`, `cpu@2`); empty: MPS.
    #[serde(default)]
    pub device: String,
    pub workload: String,
    pub batch: u32,
    pub step_ms: f64,
    pub samples_per_s: f64,
    /// Mean accelerator utilisation during the point (0–1), when sampled.
    pub gpu_busy: Option<f64>,
    pub peak_bytes: Option<u64>,
    /// Batches that ran out of memory in that sweep.
    pub oom_batches: Vec<u32>,
    /// The largest batch that fitted in that sweep, when larger than `batch`.
    #[serde(default)]
    pub largest_fit: Option<u32>,
    /// The half-width of the point's 95 % interval, as a share of its figure (from the spread
    /// of its timed steps), when known.
    #[serde(default)]
    pub ci: Option<f64>,
    /// The sweep's most energy-efficient batch against this one, where its points carry their
    /// energy.
    #[serde(default)]
    pub energy: Option<headroom_model::summary::EnergyTradeoff>,
}

/// What the newest `epochs` run (or wrapped `run`) found.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochFact {
    pub run_id: i64,
    /// Which run of which command, at which batch (`run 7 (`python train.py`) at batch 32`).
    #[serde(default)]
    pub source: String,
    pub leak: bool,
    /// Growth of the judged measure from the first to the last epoch (0.3 = +30 %).
    pub growth: f64,
    pub epochs: u32,
    /// The release policy in force (`none`, `gc`, `empty-cache`, `both`).
    pub release: String,
    pub slowing: bool,
    /// Throughput change from the first to the last epoch (−0.2 = 20 % slower).
    pub throughput_change: Option<f64>,
    /// The allocator's cache grew this much while live tensors stayed flat (the verdict "cache
    /// growth"): not a leak.
    #[serde(default)]
    pub cache_growth: Option<f64>,
}

/// The user's newest training run (`headroom run -- python train.py`), as the wrapper and the
/// observer inside it measured it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunFact {
    pub run_id: i64,
    pub command: String,
    pub batch: Option<u32>,
    /// Where the optimizer's parameters lived (`cpu`, `mps`, `cuda:0`), when observed.
    pub device: Option<String>,
    pub steps: u32,
    pub samples_per_s: Option<f64>,
    pub step_ms: Option<f64>,
    /// The 95 % interval of its mean step time, as a share of it (from the spread of its steps),
    /// when measured.
    #[serde(default)]
    pub step_ci: Option<f64>,
    /// The DataLoader waits' share of step time, and the host-to-device copies' share.
    pub data_share: Option<f64>,
    pub copy_share: Option<f64>,
    pub num_workers: Option<u32>,
    pub pin_memory: Option<bool>,
    /// Backward calls per optimizer step (gradient accumulation when above 1).
    pub accumulation: Option<u32>,
    /// Autocast in use, `device:dtype`.
    pub autocast: Vec<String>,
    pub gpu_busy: Option<f64>,
    /// The process tree's peak, and the device allocator's peak when observed.
    pub peak_bytes: u64,
    pub peak_device_bytes: Option<u64>,
    /// It ran out of memory: torch's message, or that its output said so.
    pub oom: Option<String>,
    /// The memory budget it went over (Headroom stopped it).
    pub over_budget: Option<u64>,
    /// Activation checkpointing was seen.
    #[serde(default)]
    pub checkpointing: bool,
    /// The longest DataLoader wait past the stall threshold, and the start method its workers
    /// used.
    #[serde(default)]
    pub stall: Option<headroom_model::observed::LoaderStall>,
    #[serde(default)]
    pub start_method: Option<String>,
    /// What disturbed its timing (other processes' cores, memory pressure, swap, a shared
    /// accelerator), in a few words; `None` when it ran on a quiet machine or was not read.
    #[serde(default)]
    pub disturbed: Option<String>,
    /// Host syncs the program asks for in a typical iteration, the share of step time they
    /// blocked, and where the first was called.
    #[serde(default)]
    pub syncs_per_step: Option<u32>,
    #[serde(default)]
    pub sync_share: Option<f64>,
    #[serde(default)]
    pub sync_site: Option<String>,
    /// The most one of its DataLoader workers held (its own pages): what one more costs.
    #[serde(default)]
    pub worker_bytes: Option<u64>,
}

impl RunFact {
    /// `run 7 (`python train.py`) at batch 32`: how every reason cites this run.
    pub fn source(&self) -> String {
        let mut command: String = self.command.chars().take(60).collect();
        if command.len() < self.command.len() {
            command.push('…');
        }
        format!(
            "run {} (`{command}`){}",
            self.run_id,
            self.batch
                .map(|b| format!(" at batch {b}"))
                .unwrap_or_default()
        )
    }

    /// The batch per optimizer step: the batch times the backward calls per step.
    pub fn effective_batch(&self) -> Option<u64> {
        Some(u64::from(self.batch?) * u64::from(self.accumulation.unwrap_or(1).max(1)))
    }

    /// The precision it trained in: `autocast cuda:bfloat16` or `full precision (no autocast)`.
    pub fn precision(&self) -> String {
        if self.autocast.is_empty() {
            "full precision (no autocast)".into()
        } else {
            format!("autocast {}", self.autocast.join(", "))
        }
    }

    /// The column its device speaks to: MPS, the CPU, or elsewhere (CUDA).
    pub fn column(&self) -> Column {
        match self.device.as_deref() {
            Some(d) if d.starts_with("mps") => Column::Mps,
            Some(d) if d.starts_with("cuda") => Column::Remote,
            _ => Column::Cpu,
        }
    }
}

impl EpochFact {
    /// Its source, or `run N` where none was recorded.
    pub fn cite(&self) -> String {
        if self.source.is_empty() {
            format!("run {}", self.run_id)
        } else {
            self.source.clone()
        }
    }
}

/// CPU-fallback operators seen in wrapped runs, over how many days.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FallbackFact {
    pub ops: Vec<String>,
    /// Days between the first and the newest run that reported a fallback.
    pub days: f64,
    pub runs: u32,
}

/// One operator or layer that takes a large share of the step.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowLayerFact {
    pub run_id: i64,
    pub name: String,
    /// Its share of the run's total GPU time.
    pub share: f64,
}

/// A configured remote host and its last check.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteFact {
    pub name: String,
    pub reachable: Option<bool>,
    pub detail: String,
}

/// The newest `headroom numerics` comparison: the model where it trains against a CPU copy in
/// f32.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumericsFact {
    pub run_id: i64,
    /// Where the compared side ran (`mps`, `cuda:0`, `cpu`) and in what dtype.
    pub device: String,
    pub dtype: String,
    /// Everything compared was within the tolerance.
    pub within: bool,
    /// The comparison's verdict, with its figures.
    pub verdict: String,
}

/// Everything the decision stands on.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Facts {
    /// The Python that runs the work is x86_64 under Rosetta.
    pub rosetta: bool,
    /// An Apple Silicon Mac (MPS and MLX can exist at all).
    pub apple_silicon: bool,
    /// The readiness light for MPS is green (`None`: no doctor run yet).
    pub mps_ready: Option<bool>,
    pub mps_detail: String,
    pub mlx_installed: Option<bool>,
    pub cpu: Option<SweepFact>,
    /// The accelerator's sweep at the same batch as `cpu` when there is one.
    pub mps: Option<SweepFact>,
    /// Memory over epochs: the user's newest run with three or more epochs, else the newest
    /// `headroom epochs` run.
    pub epochs: Option<EpochFact>,
    /// The user's newest training run.
    #[serde(default)]
    pub run: Option<RunFact>,
    /// The newest run with autocast and the newest of the same command at the same batch
    /// without it (first: with).
    #[serde(default)]
    pub amp: Option<(RunFact, RunFact)>,
    /// The newest run with activation checkpointing and the newest of the same command at the
    /// same batch without it (first: with).
    #[serde(default)]
    pub checkpointing: Option<(RunFact, RunFact)>,
    /// The newest run and the run of the same command before it, when their gradient
    /// accumulation differs (first: the newer).
    #[serde(default)]
    pub rescale: Option<(RunFact, RunFact)>,
    /// A leak verdict also came from a run that released memory at every epoch end.
    pub leak_with_release: Option<EpochFact>,
    pub fallback: Option<FallbackFact>,
    pub slow_layer: Option<SlowLayerFact>,
    /// The newest MLX comparison.
    #[serde(default)]
    pub mlx: Option<MlxFact>,
    /// Contention raised now, with its reasons.
    pub contention: Vec<String>,
    pub remotes: Vec<RemoteFact>,
    pub workload_kind: WorkloadKind,
    /// This machine's RAM and what is available now (bytes): what more DataLoader workers may
    /// take.
    #[serde(default)]
    pub ram_total: Option<u64>,
    #[serde(default)]
    pub ram_available: Option<u64>,
    pub cuda_parity_required: bool,
    /// On battery power at the newest readiness check.
    #[serde(default)]
    pub on_battery: bool,
    /// The newest numerics comparison.
    #[serde(default)]
    pub numerics: Option<NumericsFact>,
}
