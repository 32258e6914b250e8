//! The decision table: for this workload on this machine now, CPU, MPS, MLX or a remote host,
//! and why. [`decide`] is a pure function of [`Facts`] (what was measured) and
//! [`DecideThresholds`]; every reason it gives cites a figure and names its rule, and the
//! symptom table the UI shows next to a matched rule is data here ([`SYMPTOMS`]).

use serde::{Deserialize, Serialize};

use crate::budget::format_bytes;

/// The four columns.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    Cpu,
    Mps,
    Mlx,
    Remote,
}

impl Column {
    pub const ALL: [Self; 4] = [Self::Cpu, Self::Mps, Self::Mlx, Self::Remote];

    pub fn label(self) -> &'static str {
        match self {
            Self::Cpu => "CPU",
            Self::Mps => "MPS",
            Self::Mlx => "MLX",
            Self::Remote => "remote",
        }
    }
}

/// A column's standing.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Recommended,
    Viable,
    Risky,
    Blocked,
}

/// The rules, by name.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    Rosetta,
    NotAvailable,
    DataPipeline,
    NearOne,
    Faster,
    Leak,
    LeakPersists,
    Oom,
    FastThenSlow,
    SlowLayer,
    Fallback,
    LlmInference,
    CudaParity,
    Contention,
    NoRemote,
    RemoteDown,
    Unmeasured,
    MlxFaster,
    /// The accelerator-vs-CPU difference is within the measured noise of its threshold.
    WithinNoise,
    /// What the user's own newest run measured (throughput, accumulation, autocast).
    YourRun,
    /// The allocator's cache grows over epochs while live tensors stay flat.
    CacheGrowth,
    /// Mixed precision measured against full precision on the same command and batch.
    MixedPrecision,
    /// Activation checkpointing measured on and off: memory saved against time lost.
    Checkpointing,
    /// Gradient accumulation changed between two runs of the same command: the effective
    /// batch moved, and the learning rate and schedule must follow.
    Rescale,
    /// A DataLoader gave no batch past the stall threshold (a hang, or a pipeline that stalls).
    LoaderHang,
}

/// One reason: the rule, the column it speaks to, and the sentence with its figures.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    pub rule: Rule,
    pub column: Column,
    pub text: String,
}

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
}

/// Batches in words, smallest first: `512, 1024`, or `301, 305, 312 and 5 more up to 24815`.
fn batch_list(batches: &[u32]) -> String {
    let mut b = batches.to_vec();
    b.sort_unstable();
    b.dedup();
    let head: Vec<String> = b.iter().take(3).map(u32::to_string).collect();
    match b.len() {
        0..=3 => head.join(", "),
        n => format!("{} and {} more up to {}", head.join(", "), n - 3, b[n - 1]),
    }
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
    pub stall: Option<crate::observed::LoaderStall>,
    #[serde(default)]
    pub start_method: Option<String>,
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

/// What the user said the main job is.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    #[default]
    Training,
    Inference,
    LlmInference,
}

/// The decision rules' thresholds (defaults from field practice; replace them with your own).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecideThresholds {
    /// An accelerator less than this much faster than the CPU (step time) while the GPU is busy
    /// less than `gpu_busy` is starved: suspect the data pipeline (0.22 = 22 % faster).
    pub pipeline_speedup: f64,
    /// GPU utilisation under which the accelerator is idle (0.18 = 18 %).
    pub gpu_busy: f64,
    /// Speed-ups within this of 1× mean the work did not really move: check device placement
    /// and synchronisation (0.10: 0.9×–1.1×).
    pub near_one: f64,
    /// CPU-fallback operators seen over at least this many days mean the architecture should be
    /// split (14: two weeks).
    pub fallback_days: u32,
    /// Sweeps and runs older than this many days are not used as evidence.
    pub max_age_days: u32,
    /// One operator taking at least this share of the GPU time of a profiled run
    /// (`headroom run --profile-ops`) is a kernel gap worth profiling (0.5 = half).
    pub slow_layer_share: f64,
    /// MLX at least this much faster (samples/s) than torch at the same batch makes it the
    /// recommendation where it runs (0.10 = 10 %).
    pub mlx_faster: f64,
    /// Your run waiting on its DataLoader for at least this share of the step is bound by its
    /// data pipeline, not the device (0.5 = half).
    pub data_share: f64,
    /// What the main job is: `training`, `inference` or `llm-inference`.
    pub main_job: WorkloadKind,
    /// Results must match CUDA bit for bit.
    pub cuda_parity_required: bool,
    /// Autocast at least this much faster (samples/s) than full precision on the same command
    /// and batch pays on this machine (0.10 = 10 %).
    pub amp_gain: f64,
    /// Activation checkpointing that saves less than this share of peak memory is not worth its
    /// recomputation (0.10 = 10 %).
    pub checkpoint_saving: f64,
}

impl Default for DecideThresholds {
    fn default() -> Self {
        Self {
            pipeline_speedup: 0.22,
            gpu_busy: 0.18,
            near_one: 0.10,
            mlx_faster: 0.10,
            fallback_days: 14,
            max_age_days: 30,
            slow_layer_share: 0.5,
            data_share: crate::outcome::DATA_BOUND_SHARE,
            main_job: WorkloadKind::Training,
            cuda_parity_required: false,
            amp_gain: 0.10,
            checkpoint_saving: 0.10,
        }
    }
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
    pub cuda_parity_required: bool,
}

/// One column of the table.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnVerdict {
    pub column: Column,
    pub status: Status,
    pub strengths: Vec<String>,
    pub risks: Vec<String>,
    pub reasons: Vec<Reason>,
}

/// The table and the verdict.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// Where to run now; `None` when something must be fixed first (a Rosetta Python), or when
    /// the user's run trained on an accelerator no column names (CUDA).
    pub verdict: Option<Column>,
    pub headline: String,
    pub columns: Vec<ColumnVerdict>,
    /// Every reason, in the order the rules fired.
    pub reasons: Vec<Reason>,
    /// The symptom rows whose rules fired.
    pub symptoms: Vec<Symptom>,
}

impl Decision {
    pub fn column(&self, c: Column) -> &ColumnVerdict {
        self.columns
            .iter()
            .find(|v| v.column == c)
            .unwrap_or(&self.columns[0])
    }

    pub fn fired(&self, rule: Rule) -> bool {
        self.reasons.iter().any(|r| r.rule == rule)
    }
}

/// A symptom → hypothesis → action row, with what to look at to tell.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Symptom {
    pub rule: Rule,
    pub symptom: &'static str,
    pub hypothesis: &'static str,
    pub action: &'static str,
    /// Observability: what to measure to confirm it, and with what.
    pub observe: &'static str,
}

/// The symptom and observability tables, one row per rule that points at a cause.
pub const SYMPTOMS: &[Symptom] = &[
    Symptom { rule: Rule::Rosetta, symptom: "MPS unavailable, everything slow", hypothesis: "an x86_64 Python running under Rosetta", action: "install an arm64 Python (Miniforge, python.org universal2, uv) and reinstall torch", observe: "`headroom doctor`: the interpreter's machine and `sysctl.proc_translated`" },
    Symptom { rule: Rule::DataPipeline, symptom: "the step waits on its DataLoader (on an accelerator: barely faster than the CPU and mostly idle)", hypothesis: "the data pipeline starves the training, not the device", action: "more DataLoader workers, decoding and augmentation done once ahead of training; pin_memory only where host-to-device copies were measured to take a share of the step", observe: "`headroom run`: the DataLoader wait and copy shares of your step; GPU utilisation (ioreg Device Utilization %)" },
    Symptom { rule: Rule::NearOne, symptom: "speed-up near 1×", hypothesis: "the work is not on the device, or every step synchronises", action: "check that model and batch are `.to(device)`, and look for `.item()`/`.cpu()` inside the step", observe: "step time on both devices at the same batch (`headroom sweep --compare cpu`)" },
    Symptom { rule: Rule::Leak, symptom: "memory climbs epoch after epoch", hypothesis: "a reference leak: tensors kept across epochs", action: "store `loss.item()`, not `loss`; clear caches and hooks; `gc.collect()` at epoch ends", observe: "live tensor bytes per epoch (`headroom epochs`, `headroom run`)" },
    Symptom { rule: Rule::CacheGrowth, symptom: "the process holds more memory each epoch, but its live tensors do not grow", hypothesis: "the caching allocator keeps freed blocks: not a leak", action: "`torch.mps.empty_cache()` / `torch.cuda.empty_cache()` at epoch ends, or a lower `PYTORCH_MPS_HIGH_WATERMARK_RATIO`", observe: "live and cache bytes per epoch (`headroom run`, `headroom epochs`)" },
    Symptom { rule: Rule::LeakPersists, symptom: "memory still climbs with gc and empty_cache at every epoch", hypothesis: "the leak is in code you cannot change soon", action: "run it on a dedicated remote host where its growth hurts nobody", observe: "`headroom epochs --release both` growth" },
    Symptom { rule: Rule::Oom, symptom: "out of memory at some batches", hypothesis: "the batch does not fit beside everything else", action: "use the sweep's max-safe batch; release the cache between phases", observe: "peak memory per batch in the sweep" },
    Symptom { rule: Rule::FastThenSlow, symptom: "fast early, slow later", hypothesis: "the allocator cache grows until the system swaps", action: "lower the batch and release the cache at epoch ends", observe: "throughput and cache bytes per epoch" },
    Symptom { rule: Rule::SlowLayer, symptom: "one layer takes most of the step", hypothesis: "a kernel gap on this backend", action: "profile that layer (MPS profiler, `torch.profiler`); replace it or keep it on the CPU", observe: "per-operator time from the MPS profiler log" },
    Symptom { rule: Rule::Fallback, symptom: "CPU-fallback operators in every run for weeks", hypothesis: "the architecture relies on operators MPS lacks", action: "split the model: run those parts elsewhere, or swap the operators", observe: "fallback operators per run in the ledger (`headroom run`)" },
    Symptom { rule: Rule::LlmInference, symptom: "the main job is LLM inference", hypothesis: "MLX (and Ollama on MLX) is faster and leaner for it on Apple Silicon", action: "try `mlx-lm` first; keep torch for training", observe: "tokens/s on both stacks" },
    Symptom { rule: Rule::CudaParity, symptom: "results must match CUDA bit for bit", hypothesis: "no Apple backend gives CUDA's numerics", action: "train where CUDA is", observe: "a reference run's outputs compared exactly" },
    Symptom { rule: Rule::MlxFaster, symptom: "MLX runs the same workload faster than torch here", hypothesis: "MLX's kernels and lazy evaluation suit this model on Apple Silicon", action: "port the training step to `mlx.nn` where it pays; keep torch where its ecosystem matters", observe: "samples/s of both at the same batch (`headroom sweep --compare mlx`)" },
    Symptom { rule: Rule::WithinNoise, symptom: "the speed difference is too close to its threshold to call", hypothesis: "the two points were timed with more spread than the difference: other work on the machine, or steps that vary", action: "measure again with the machine quiet (close the call, the build, the browser tabs)", observe: "each point's ± and the load it was timed beside (`headroom sweep`'s ± column and warnings)" },
    Symptom { rule: Rule::MixedPrecision, symptom: "training is slower or larger than it needs to be", hypothesis: "full precision where the device has fast half-precision kernels (or autocast where it does not pay)", action: "use autocast with the dtype that paid in the measurement (bf16 where supported; f16 with a GradScaler); on MPS compare validation metrics with a tolerance, not losses bit for bit", observe: "`headroom run --sweep amp=off,bf16 -- python train.py`: samples/s and peak with and without" },
    Symptom { rule: Rule::Checkpointing, symptom: "the batch you want does not fit", hypothesis: "activations dominate memory; recomputing them in backward trades time for memory", action: "turn activation checkpointing on where the memory saved lets the batch fit; off where it saves little", observe: "`headroom run --sweep ckpt=0,1 -- python train.py --checkpointing {ckpt}`: peak and step time on and off" },
    Symptom { rule: Rule::Rescale, symptom: "a run with gradient accumulation converges differently", hypothesis: "the effective batch changed, the learning rate and schedule did not", action: "scale the learning rate with the effective batch (linear, or square root for adaptive optimizers) and the schedule's step counts with the steps per epoch", observe: "backward calls per optimizer step in each run (`headroom run`, `headroom ledger compare`)" },
    Symptom { rule: Rule::LoaderHang, symptom: "training stops without an error, the process alive", hypothesis: "a DataLoader hang: a worker deadlocked after fork, a dead worker, or a read that never returns", action: "`multiprocessing_context=\"spawn\"` on the DataLoader (or TOKENIZERS_PARALLELISM=false), a `timeout=` to turn the hang into an error, num_workers=0 to tell the dataset from the workers", observe: "`headroom run --stall-after 60`: the stall, its workers alive and the start method" },
    Symptom { rule: Rule::Contention, symptom: "the call, the IDE or a local LLM server eat the memory training needs", hypothesis: "memory contention, not the model", action: "close the call or the IDE, unload the local model (`ollama stop MODEL`, LM Studio's eject) or quit its server, or move the run to the remote host", observe: "`headroom contention`: memory by app group (local LLM servers named), swap growth, pressure" },
];

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn standing(c: Column) -> (Vec<String>, Vec<String>) {
    let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect();
    match c {
        Column::Cpu => (
            v(&["runs every operator: nothing to port"]),
            v(&["throughput is capped by the cores"]),
        ),
        Column::Mps => (
            v(&["reuses your PyTorch code: `.to(\"mps\")`"]),
            v(&[
                "operator gaps (CPU fallback)",
                "numeric differences from CUDA",
            ]),
        ),
        Column::Mlx => (
            v(&["built for Apple Silicon and its unified memory"]),
            v(&["a second stack to learn, port to and maintain"]),
        ),
        Column::Remote => (
            v(&["isolation: promises you can keep (overnight, no call in the way)"]),
            v(&["running cost", "moving code and data"]),
        ),
    }
}

/// The reasons the user's newest run gives: what it measured, running out of memory, and a
/// data pipeline that bounds it (with `pin_memory` only where the copies were measured to matter).
fn your_run(r: &RunFact, t: &DecideThresholds, b: &mut Board) {
    let column = r.column();
    let src = r.source();
    let mut measured = Vec::new();
    if let Some(sps) = r.samples_per_s {
        measured.push(format!("{} samples/s", crate::stats::sig3(sps)));
    }
    if let Some(ms) = r.step_ms {
        measured.push(format!("{} ms per iteration", crate::stats::sig3(ms)));
    }
    if let Some(a) = r.accumulation.filter(|a| *a > 1) {
        measured.push(format!("gradient accumulation {a}"));
    }
    if !r.autocast.is_empty() {
        measured.push(format!("autocast {}", r.autocast.join(", ")));
    }
    if let Some(d) = &r.device {
        measured.push(format!("on {d}"));
    }
    if let Some(b) = r.gpu_busy {
        measured.push(format!("GPU busy {} of the run", pct(b)));
    }
    if !measured.is_empty() {
        b.say(
            Rule::YourRun,
            column,
            format!("{src}: {}", measured.join(", ")),
        );
    }
    if let Some(budget) = r.over_budget {
        b.say(Rule::Oom, column, format!("{src} went over its {} memory budget (peak {}): use a smaller batch, or give it more memory", format_bytes(budget), format_bytes(r.peak_bytes)));
        b.set(column, Status::Risky);
    } else if let Some(msg) = &r.oom {
        b.say(
            Rule::Oom,
            column,
            format!(
                "{src} ran out of memory ({}): use a smaller batch and release the cache",
                msg.lines().next().unwrap_or_default()
            ),
        );
        b.set(column, Status::Risky);
    }
    if let Some(share) = r.data_share.filter(|s| *s >= t.data_share) {
        let mut advice = match r.num_workers {
            Some(0) => {
                "set num_workers above 0 (loading runs in the training process now)".to_owned()
            }
            Some(n) => format!("raise num_workers above {n}"),
            None => "raise num_workers".to_owned(),
        };
        if let Some(copy) = r
            .copy_share
            .filter(|c| *c >= crate::observed::COPIES_MATTER)
        {
            if r.pin_memory != Some(true) {
                advice.push_str(&format!(
                    "; pin_memory=True with non_blocking copies (host-to-device copies take {} of the step)",
                    pct(copy)
                ));
            }
        }
        b.say(Rule::DataPipeline, column, format!("{src}: waiting for the DataLoader takes {} of the step (threshold {}): the data pipeline bounds it, not the device; {advice}", pct(share), pct(t.data_share)));
        b.set(column, Status::Risky);
    }
}

/// The relative change from `base` to `x` (0.25 = 25 % more).
fn change(x: f64, base: f64) -> Option<f64> {
    (base > 0.0 && x.is_finite()).then(|| (x - base) / base)
}

/// A signed percentage: `+25 %`, `-8 %`.
fn signed_pct(x: f64) -> String {
    format!("{:+.0} %", x * 100.0)
}

/// The peak a run's comparison uses: the device allocator's where observed, else the process
/// tree's.
fn compared_peak(r: &RunFact) -> u64 {
    r.peak_device_bytes.unwrap_or(r.peak_bytes)
}

/// The reasons pairs of the user's runs give (mixed precision, checkpointing, accumulation),
/// and a DataLoader stall in the newest run.
fn practices(f: &Facts, t: &DecideThresholds, b: &mut Board) {
    if let Some((with, without)) = &f.amp {
        if let (Some(on), Some(off)) = (with.samples_per_s, without.samples_per_s) {
            let gain = change(on, off).unwrap_or(0.0);
            let peak = change(compared_peak(with) as f64, compared_peak(without) as f64)
                .map(|p| format!(", peak {}", signed_pct(p)))
                .unwrap_or_default();
            let both = format!("{} vs {}", with.source(), without.source());
            // The ratio's interval from the two runs' (shares add in quadrature), carried to the
            // gain (with / without − 1): a gain this close to the threshold calls nothing.
            let noise = (1.0 + gain).abs()
                * with
                    .step_ci
                    .unwrap_or(0.0)
                    .hypot(without.step_ci.unwrap_or(0.0));
            if noise > 0.0 && (gain - t.amp_gain).abs() < noise {
                b.say(
                    Rule::WithinNoise,
                    with.column(),
                    format!(
                        "{} against full precision: {} ± {} samples/s{peak} ({both}; the two runs' measured spread): too close to the {} threshold to call either way; measure both again on a quieter machine",
                        with.precision(),
                        signed_pct(gain),
                        pct(noise),
                        pct(t.amp_gain)
                    ),
                );
            } else {
                let mut text = if gain >= t.amp_gain {
                    format!("{} pays here: {} samples/s{peak} against full precision ({both}; threshold {})", with.precision(), signed_pct(gain), pct(t.amp_gain))
                } else {
                    format!("{} does not pay here: {} samples/s{peak} against full precision ({both}; threshold {}): keep full precision unless memory is the limit", with.precision(), signed_pct(gain), pct(t.amp_gain))
                };
                if with
                    .autocast
                    .iter()
                    .any(|a| a.ends_with("float16") && !a.ends_with("bfloat16"))
                {
                    text.push_str(
                        "; float16 training needs a GradScaler against underflowing gradients",
                    );
                }
                if with.column() == Column::Mps || without.column() == Column::Mps {
                    text.push_str("; MPS's mixed-precision numerics differ from CUDA's: judge it by validation metrics within a tolerance (`headroom ledger compare A B --tolerance 0.01`), never by bitwise losses");
                }
                b.say(Rule::MixedPrecision, with.column(), text);
            }
        }
    }
    if let Some((with, without)) = &f.checkpointing {
        let (m, n) = (compared_peak(with), compared_peak(without));
        let saved = change(m as f64, n as f64).map_or(0.0, |c| -c);
        let cost = match (with.step_ms, without.step_ms) {
            (Some(on), Some(off)) => {
                change(on, off).map(|c| format!(" and costs {} per step", signed_pct(c)))
            }
            _ => None,
        }
        .unwrap_or_else(|| " (step time not measured in both)".into());
        let verdict = if saved >= t.checkpoint_saving {
            "worth it where the memory saved lets a larger batch fit or keeps the run out of swap; otherwise the time is lost for nothing"
        } else {
            "it saves too little to pay for its recomputation: turn it off unless the batch does not fit without it"
        };
        b.say(
            Rule::Checkpointing,
            with.column(),
            format!(
                "activation checkpointing saves {} of peak memory ({} to {}, {}){cost} at batch {} ({} vs {}; threshold {} saved): {verdict}",
                pct(saved),
                format_bytes(n),
                format_bytes(m),
                signed_pct(-saved),
                with.batch.map_or_else(|| "?".into(), |b| b.to_string()),
                with.source(),
                without.source(),
                pct(t.checkpoint_saving)
            ),
        );
    }
    if let Some((new, old)) = &f.rescale {
        if let (Some(e1), Some(e0)) = (new.effective_batch(), old.effective_batch()) {
            if e1 != e0 {
                let ratio = e1 as f64 / e0 as f64;
                b.say(
                    Rule::Rescale,
                    new.column(),
                    format!(
                        "the effective batch changed from {e0} ({} × {} backward calls per step, run {}) to {e1} ({} × {}, run {}): the optimizer now takes {:.2}× the steps per epoch; scale the learning rate by {:.2} (linear rule; {:.2} by the square-root rule) and the schedule's step counts (warm-up, decay) by {:.2} before comparing the two",
                        old.batch.unwrap_or(0),
                        old.accumulation.unwrap_or(1),
                        old.run_id,
                        new.batch.unwrap_or(0),
                        new.accumulation.unwrap_or(1),
                        new.run_id,
                        1.0 / ratio,
                        ratio,
                        ratio.sqrt(),
                        1.0 / ratio
                    ),
                );
            }
        }
    }
    if let Some(r) = &f.run {
        if let Some(stall) = &r.stall {
            let triage = crate::observed::stall_triage(stall, r.start_method.as_deref());
            b.say(
                Rule::LoaderHang,
                r.column(),
                format!(
                    "{}: the DataLoader gave {}. {triage}",
                    r.source(),
                    stall.describe()
                ),
            );
            if !stall.ended {
                b.set(r.column(), Status::Risky);
            }
        }
    }
}

/// Decides. Pure: the same facts and thresholds give the same table.
#[allow(clippy::too_many_lines)]
/// The reasons found so far and each column's standing, as the rules add to them.
struct Board {
    reasons: Vec<Reason>,
    status: [Status; 4],
}

impl Board {
    fn say(&mut self, rule: Rule, column: Column, text: String) {
        self.reasons.push(Reason { rule, column, text });
    }

    /// Raises a column's status to `s` (a column's status only ever worsens).
    fn set(&mut self, c: Column, s: Status) {
        let i = idx(c);
        self.status[i] = self.status[i].max(s);
    }

    fn usable(&self, c: Column) -> bool {
        self.status[idx(c)] != Status::Blocked
    }
}

fn idx(c: Column) -> usize {
    Column::ALL.iter().position(|x| *x == c).unwrap_or(0)
}

/// What the measured rules found that the verdict weighs.
#[derive(Debug, Clone, Copy)]
struct Measured {
    remote_ok: bool,
    /// The accelerator against the CPU: faster enough, not, or unmeasured.
    accel_wins: Option<bool>,
    too_close: bool,
    leak_persists: bool,
    mlx_wins: bool,
}

/// What is available at all: Rosetta, MPS and MLX, the remote hosts. Whether a host answered.
fn availability(f: &Facts, b: &mut Board) -> bool {
    if f.rosetta {
        b.say(Rule::Rosetta, Column::Mps, "the Python that runs your work is x86_64 under Rosetta: MPS and MLX are out of reach and the CPU is emulated; fix Python first".into());
        b.set(Column::Mps, Status::Blocked);
        b.set(Column::Mlx, Status::Blocked);
        b.set(Column::Cpu, Status::Risky);
    }
    if !f.apple_silicon {
        b.say(
            Rule::NotAvailable,
            Column::Mps,
            "not an Apple Silicon Mac: MPS and MLX do not exist here".into(),
        );
        b.set(Column::Mps, Status::Blocked);
        b.set(Column::Mlx, Status::Blocked);
    } else if f.mps_ready == Some(false) && !f.rosetta {
        b.say(
            Rule::NotAvailable,
            Column::Mps,
            format!("MPS is not ready: {}", f.mps_detail),
        );
        b.set(Column::Mps, Status::Blocked);
    }
    if f.apple_silicon && f.mlx_installed == Some(false) {
        b.say(
            Rule::NotAvailable,
            Column::Mlx,
            "mlx is not installed in this Python (`pip install mlx`)".into(),
        );
        b.set(Column::Mlx, Status::Risky);
    }
    let remote_ok = f.remotes.iter().any(|r| r.reachable == Some(true));
    if f.remotes.is_empty() {
        b.say(
            Rule::NoRemote,
            Column::Remote,
            "no remote host configured yet (`headroom remote add`)".into(),
        );
        b.set(Column::Remote, Status::Blocked);
    } else if !remote_ok {
        let names: Vec<String> = f
            .remotes
            .iter()
            .map(|r| format!("{} ({})", r.name, r.detail))
            .collect();
        b.say(
            Rule::RemoteDown,
            Column::Remote,
            format!(
                "no configured host answered its last check: {}",
                names.join("; ")
            ),
        );
        b.set(Column::Remote, Status::Risky);
    }
    remote_ok
}

/// Speed: the accelerator against the CPU at the same batch, and the sweeps' out-of-memory
/// points. Whether the accelerator won (None: unmeasured), and whether it was too close to call.
fn speed(f: &Facts, t: &DecideThresholds, b: &mut Board) -> (Option<bool>, bool) {
    let mut accel_wins = None;
    let mut too_close = false;
    if let (Some(cpu), Some(mps)) = (&f.cpu, &f.mps) {
        let faster = (cpu.step_ms - mps.step_ms) / cpu.step_ms;
        let speedup = cpu.step_ms / mps.step_ms;
        let on = if mps.device.is_empty() || mps.device == "mps" {
            "MPS"
        } else {
            mps.device.as_str()
        };
        let at = format!(
            "{} at batch {}: {:.1} ms per step on {on} vs {:.1} ms on the CPU ({speedup:.2}×, sweep run {}, baseline run {})",
            mps.workload, mps.batch, mps.step_ms, cpu.step_ms, mps.run_id, cpu.run_id
        );
        // The ratio's interval from the two points' (shares add in quadrature), carried to
        // "faster" (1 − device/CPU): a difference from the threshold inside it calls nothing.
        let noise = (1.0 - faster).abs() * cpu.ci.unwrap_or(0.0).hypot(mps.ci.unwrap_or(0.0));
        too_close = noise > 0.0 && (faster - t.pipeline_speedup).abs() < noise;
        if too_close {
            b.say(
                Rule::WithinNoise,
                Column::Mps,
                format!(
                    "{at}, {} faster ± {} (the two points' measured spread): too close to the {} threshold to call either way; measure both again on a quieter machine",
                    pct(faster),
                    pct(noise),
                    pct(t.pipeline_speedup)
                ),
            );
        } else {
            // The user's own run measured its DataLoader waits: that share decides whether the data
            // pipeline bounds the work (the built-in sweep's inputs live on the device and only
            // suggest it); the sweep stays the machine's speed check.
            let pipeline_measured = f.run.as_ref().is_some_and(|r| r.data_share.is_some());
            let idle = mps
                .gpu_busy
                .filter(|b| *b < t.gpu_busy && !pipeline_measured);
            let mut explained = false;
            if faster < t.pipeline_speedup {
                if let Some(busy) = idle {
                    explained = true;
                    b.say(Rule::DataPipeline, Column::Mps, format!("{at}, {} faster (threshold {}) while the GPU was busy {} of the time (threshold {}): suspect the data pipeline, not MPS", pct(faster), pct(t.pipeline_speedup), pct(busy), pct(t.gpu_busy)));
                    b.set(Column::Mps, Status::Risky);
                }
            }
            if (speedup - 1.0).abs() <= t.near_one {
                explained = true;
                b.say(
                    Rule::NearOne,
                    Column::Mps,
                    format!(
                        "{at}: near 1× (within ±{}); check device placement and synchronisation",
                        pct(t.near_one)
                    ),
                );
                b.set(Column::Mps, Status::Risky);
            }
            if faster >= t.pipeline_speedup {
                b.say(
                    Rule::Faster,
                    Column::Mps,
                    format!("{at}, {} faster than the CPU", pct(faster)),
                );
                accel_wins = Some(true);
            } else {
                accel_wins = Some(false);
                if !explained {
                    b.say(
                        Rule::Faster,
                        Column::Cpu,
                        format!(
                            "{at}: only {} faster than the CPU (threshold {})",
                            pct(faster),
                            pct(t.pipeline_speedup)
                        ),
                    );
                }
            }
        }
    } else if f.apple_silicon && !f.rosetta {
        b.say(Rule::Unmeasured, Column::Mps, "no sweep compares MPS with the CPU at the same batch yet: `headroom sweep --device mps --compare cpu`".into());
    }
    for (column, sweep) in [(Column::Cpu, &f.cpu), (Column::Mps, &f.mps)] {
        let Some(sweep) = sweep else { continue };
        if !sweep.oom_batches.is_empty() {
            // The batch the sweep chose is its max safe one unless a larger batch fitted.
            let chosen = match sweep.largest_fit {
                Some(b) => format!("largest that fitted {b}; recommended {}", sweep.batch),
                None => format!("max safe {}", sweep.batch),
            };
            b.say(Rule::Oom, column, format!("out of memory at batch {} in sweep {} ({chosen}{}): use a smaller batch and release the cache", batch_list(&sweep.oom_batches), sweep.run_id, sweep.peak_bytes.map(|b| format!(", {} peak", format_bytes(b))).unwrap_or_default()));
        }
    }
    (accel_wins, too_close)
}

/// Memory over epochs, the slow layer, CPU fallbacks, the workload's kind and CUDA parity.
/// Whether a leak persists with the release.
fn memory_and_signs(f: &Facts, t: &DecideThresholds, b: &mut Board) -> bool {
    if let Some(e) = &f.epochs {
        if e.leak {
            b.say(Rule::Leak, Column::Mps, format!("memory grew {:+.0} % over {} epochs ({}, release {}): suspect a reference leak", e.growth * 100.0, e.epochs, e.cite(), e.release));
        }
        if let Some(g) = e.cache_growth.filter(|_| !e.leak) {
            b.say(Rule::CacheGrowth, Column::Mps, format!("the allocator's cache grew {:+.0} % over {} epochs while live tensors stayed flat ({}): not a leak; empty_cache at epoch ends gives it back", g * 100.0, e.epochs, e.cite()));
        }
        if e.slowing {
            b.say(Rule::FastThenSlow, Column::Mps, format!("fast early, slow later: throughput {} from the first to the last epoch ({}); adjust the batch and release the cache", e.throughput_change.map_or_else(|| "fell".into(), |c| format!("{:+.0} %", c * 100.0)), e.cite()));
            b.set(Column::Mps, Status::Risky);
        }
    }
    let leak_persists = f.leak_with_release.as_ref().filter(|e| e.leak);
    if let Some(e) = leak_persists {
        b.say(Rule::LeakPersists, Column::Remote, format!("the leak persists with release `{}` (+{:.0} % over {} epochs, {}): give it a dedicated remote host", e.release, e.growth * 100.0, e.epochs, e.cite()));
    }
    if let Some(s) = f
        .slow_layer
        .as_ref()
        .filter(|s| s.share >= t.slow_layer_share)
    {
        b.say(
            Rule::SlowLayer,
            Column::Mps,
            format!(
                "{} takes {} of the GPU time (run {}; threshold {}): a kernel gap; profile it",
                s.name,
                pct(s.share),
                s.run_id,
                pct(t.slow_layer_share)
            ),
        );
        b.set(Column::Mps, Status::Risky);
    }
    if let Some(fb) = &f.fallback {
        if fb.days >= f64::from(t.fallback_days) {
            b.say(Rule::Fallback, Column::Mps, format!("CPU-fallback operators ({}) in {} runs over {:.0} days (threshold {} days): split the architecture", fb.ops.join(", "), fb.runs, fb.days, t.fallback_days));
            b.set(Column::Mps, Status::Risky);
        }
    }
    if f.workload_kind == WorkloadKind::LlmInference {
        b.say(
            Rule::LlmInference,
            Column::Mlx,
            "LLM inference is the main job: MLX (and Ollama on MLX) first".into(),
        );
    }
    if f.cuda_parity_required {
        b.say(
            Rule::CudaParity,
            Column::Remote,
            "bitwise CUDA parity is required: train where CUDA is".into(),
        );
        b.set(Column::Mps, Status::Risky);
        b.set(Column::Mlx, Status::Risky);
    }
    leak_persists.is_some()
}

/// MLX against torch at the same batch: whether MLX won.
fn mlx_against_torch(f: &Facts, t: &DecideThresholds, b: &mut Board) -> bool {
    let mut mlx_wins = false;
    if let Some(m) = &f.mlx {
        let ratio = m.mlx_samples_per_s / m.torch_samples_per_s;
        let figures = format!(
            "{} at batch {}: MLX ({}) {:.1} samples/s vs torch on {} {:.1} samples/s ({ratio:.2}×, run {})",
            m.workload, m.batch, m.mlx_device, m.mlx_samples_per_s, m.torch_device, m.torch_samples_per_s, m.run_id
        );
        if ratio >= 1.0 + t.mlx_faster {
            mlx_wins = true;
            b.say(
                Rule::MlxFaster,
                Column::Mlx,
                format!("{figures}: MLX is at least {} faster", pct(t.mlx_faster)),
            );
        } else {
            b.say(
                Rule::Unmeasured,
                Column::Mlx,
                format!(
                    "{figures}: not {} faster, so torch stays",
                    pct(t.mlx_faster)
                ),
            );
        }
    }
    mlx_wins
}

/// Memory contention: every column on this machine becomes risky.
fn contention(f: &Facts, b: &mut Board) {
    for c in &f.contention {
        b.say(
            Rule::Contention,
            Column::Remote,
            format!("memory contention: {c}"),
        );
        b.set(Column::Cpu, Status::Risky);
        b.set(Column::Mps, Status::Risky);
        b.set(Column::Mlx, Status::Risky);
    }
}

/// The verdict, most pressing first, and its headline.
fn verdict(f: &Facts, b: &Board, m: &Measured) -> (Option<Column>, String) {
    let wants_remote = m.leak_persists || f.cuda_parity_required || !f.contention.is_empty();
    if f.rosetta {
        (None, "Fix Python first: it runs under Rosetta".to_owned())
    } else if wants_remote {
        let why = if f.cuda_parity_required {
            "CUDA parity is required"
        } else if m.leak_persists {
            "the leak persists with release"
        } else {
            "memory contention"
        };
        let tail = if m.remote_ok {
            ""
        } else if f.remotes.is_empty() {
            " (add a host: `headroom remote add`)"
        } else {
            " (its host did not answer)"
        };
        (Some(Column::Remote), format!("Remote: {why}{tail}"))
    } else if f.workload_kind == WorkloadKind::LlmInference && b.usable(Column::Mlx) {
        (
            Some(Column::Mlx),
            "MLX: LLM inference is the main job".to_owned(),
        )
    } else if m.mlx_wins && b.usable(Column::Mlx) {
        (
            Some(Column::Mlx),
            "MLX: measured faster than torch for this workload".to_owned(),
        )
    } else if b.usable(Column::Mps) && m.accel_wins != Some(false) {
        let head = if m.accel_wins == Some(true) {
            "MPS: measured faster than the CPU"
        } else if m.too_close {
            "MPS, too close to call: its lead over the CPU is within the measured noise"
        } else {
            "MPS, unmeasured: run `headroom sweep --device mps --compare cpu`"
        };
        (Some(Column::Mps), head.to_owned())
    } else if let Some((r, d)) = f
        .run
        .as_ref()
        .and_then(|r| Some((r, r.device.as_deref().filter(|d| d.starts_with("cuda"))?)))
        .filter(|_| m.accel_wins != Some(false))
    {
        // No column names CUDA: the user's run measured it, so it is not put below the CPU.
        let speed = r
            .samples_per_s
            .map(|s| format!(" at {} samples/s", crate::stats::sig3(s)))
            .unwrap_or_default();
        (
            None,
            format!(
                "CUDA: your newest run (run {}) trained on {d}{speed}; keep it there (the MPS and MLX columns are for Apple Silicon)",
                r.run_id
            ),
        )
    } else {
        let head = if m.accel_wins == Some(false) {
            "CPU: the accelerator is not faster enough to pay off"
        } else {
            "CPU: no MPS or MLX on this machine"
        };
        (Some(Column::Cpu), head.to_owned())
    }
}

/// The decision: every rule applied to the facts under the thresholds, each column's standing,
/// the verdict and its headline, and the symptoms the reasons point to.
pub fn decide(f: &Facts, t: &DecideThresholds) -> Decision {
    let mut b = Board {
        reasons: Vec::new(),
        status: [Status::Viable; 4],
    };
    let remote_ok = availability(f, &mut b);
    let (accel_wins, too_close) = speed(f, t, &mut b);
    // The user's own run, and what pairs of its runs measured.
    if let Some(r) = &f.run {
        your_run(r, t, &mut b);
    }
    practices(f, t, &mut b);
    let leak_persists = memory_and_signs(f, t, &mut b);
    let mlx_wins = mlx_against_torch(f, t, &mut b);
    contention(f, &mut b);
    let m = Measured {
        remote_ok,
        accel_wins,
        too_close,
        leak_persists,
        mlx_wins,
    };
    let (verdict, headline) = verdict(f, &b, &m);
    if let Some(v) = verdict {
        b.status[idx(v)] = match b.status[idx(v)] {
            Status::Viable | Status::Risky => Status::Recommended,
            s => s,
        };
    }
    let columns = Column::ALL
        .iter()
        .map(|c| {
            let (strengths, risks) = standing(*c);
            ColumnVerdict {
                column: *c,
                status: b.status[idx(*c)],
                strengths,
                risks,
                reasons: b
                    .reasons
                    .iter()
                    .filter(|r| r.column == *c)
                    .cloned()
                    .collect(),
            }
        })
        .collect();
    let symptoms = SYMPTOMS
        .iter()
        .filter(|s| b.reasons.iter().any(|r| r.rule == s.rule))
        .copied()
        .collect();
    Decision {
        verdict,
        headline,
        columns,
        reasons: b.reasons,
        symptoms,
    }
}
