//! What the decision says: the four columns and each one's status, the rules by name, the
//! reasons that cite a figure, the table with its verdict, and the symptom rows ([`SYMPTOMS`]) the
//! UI shows next to a rule that fired — data, not code.

use serde::{Deserialize, Serialize};

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
    /// The program syncs the host every iteration (`loss.item()`, logging) for a share of the
    /// step.
    SyncPoints,
    /// On battery, a smaller batch than the fastest trains for much less energy per sample.
    Energy,
    /// The model on its device (or in a lower dtype) measured against a CPU copy in f32.
    Numerics,
}

/// One reason: the rule, the column it speaks to, and the sentence with its figures.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    pub rule: Rule,
    pub column: Column,
    pub text: String,
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
    Symptom { rule: Rule::DataPipeline, symptom: "the step waits on its DataLoader (on an accelerator: barely faster than the CPU and mostly idle)", hypothesis: "the data pipeline starves the training, not the device", action: "more DataLoader workers, decoding and augmentation done once ahead of training; pin_memory only where host-to-device copies were measured to take a share of the step", observe: "`headroom run`: the DataLoader wait and copy shares of your step; GPU utilisation (the IOAccelerator's Device Utilization % on a Mac, NVML on NVIDIA)" },
    Symptom { rule: Rule::NearOne, symptom: "speed-up near 1×", hypothesis: "the work is not on the device, or every step synchronises", action: "check that model and batch are `.to(device)`, and look for `.item()`/`.cpu()` inside the step", observe: "step time on both devices at the same batch (`headroom sweep --compare cpu`)" },
    Symptom { rule: Rule::Leak, symptom: "memory climbs epoch after epoch", hypothesis: "a reference leak: tensors kept across epochs", action: "store `loss.item()`, not `loss`; clear caches and hooks; `gc.collect()` at epoch ends", observe: "live tensor bytes per epoch (`headroom epochs`, `headroom run`)" },
    Symptom { rule: Rule::CacheGrowth, symptom: "the process holds more memory each epoch, but its live tensors do not grow", hypothesis: "the caching allocator keeps freed blocks: not a leak", action: "`torch.mps.empty_cache()` / `torch.cuda.empty_cache()` at epoch ends, or a lower `PYTORCH_MPS_HIGH_WATERMARK_RATIO`", observe: "live and cache bytes per epoch (`headroom run`, `headroom epochs`)" },
    Symptom { rule: Rule::LeakPersists, symptom: "memory still climbs with gc and empty_cache at every epoch", hypothesis: "the leak is in code you cannot change soon", action: "run it on a dedicated remote host where its growth hurts nobody", observe: "growth with the release on: `headroom run --sweep release=none,both -- python train.py` (or `headroom epochs --release both`)" },
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
    Symptom { rule: Rule::SyncPoints, symptom: "the device waits between steps; steps are slower than their kernels", hypothesis: "the program syncs the host every iteration: `loss.item()`, `.tolist()`, `.cpu()`, a tensor logged or printed each step", action: "keep the loss as a tensor (`running += loss.detach()`) and call `.item()` every N steps or at the epoch's end; log every N steps", observe: "`headroom run`: host syncs per iteration, the share of the step they block, and where the first is called" },
    Symptom { rule: Rule::Numerics, symptom: "is MPS (or bf16) computing the same model as the CPU?", hypothesis: "a backend's kernels or a lower dtype can differ by more than the task tolerates, silently", action: "where a layer differs past the tolerance, check that layer's operators on the device before trusting its numbers, or keep the dtype at f32 there", observe: "`headroom numerics -- python train.py` (and `--dtype bf16`): every layer against a CPU copy in f32" },
    Symptom { rule: Rule::Energy, symptom: "training drains the battery", hypothesis: "the fastest batch is not the most efficient: past the knee, more power buys little more speed", action: "on battery, train at the batch with the most samples per joule; plug in for the fastest", observe: "`headroom sweep`'s samples/J column and its energy line (power from IOReport on Apple Silicon, NVML on CUDA, RAPL on Linux CPUs)" },
    Symptom { rule: Rule::Contention, symptom: "the call, the IDE or a local LLM server eat the memory training needs", hypothesis: "memory contention, not the model", action: "close the call or the IDE, unload the local model (`ollama stop MODEL`, LM Studio's eject) or quit its server, or move the run to the remote host", observe: "`headroom contention`: memory by app group (local LLM servers named), swap growth, pressure" },
];
