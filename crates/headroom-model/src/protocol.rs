//! The worker protocol: the request a parent sends to `headroom worker` on stdin (one JSON line)
//! and the newline-delimited JSON events the worker writes to stdout. The same protocol is spoken
//! locally and over `ssh`; a parent refuses a worker whose `protocol` differs from its own.

use serde::{Deserialize, Serialize};

use crate::budget::BudgetSpec;
use crate::error::Invalid;

/// Version of the event stream; bumped on any incompatible change.
pub const PROTOCOL_VERSION: u32 = 1;

/// Names of the built-in workloads.
pub const BUILTIN_WORKLOADS: [&str; 6] = ["mlp", "cnn", "vit-tiny", "gpt-tiny", "matmul", "copy"];

/// Element type of the model and its inputs.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F32,
    F16,
    Bf16,
}

impl Dtype {
    /// Every dtype, as a form offers them.
    pub const ALL: [Self; 3] = [Self::F32, Self::F16, Self::Bf16];

    /// Parses `f32`, `f16`/`fp16`/`half`, `bf16`.
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        match text.trim().to_ascii_lowercase().as_str() {
            "f32" | "fp32" | "float32" | "float" => Ok(Self::F32),
            "f16" | "fp16" | "float16" | "half" => Ok(Self::F16),
            "bf16" | "bfloat16" => Ok(Self::Bf16),
            _ => Err(Invalid(format!(
                "dtype {text:?} is not one of f32, f16, bf16"
            ))),
        }
    }

    /// The short name, as accepted by [`Dtype::parse`].
    pub fn as_str(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
        }
    }
}

/// Whether a step is a full training step or a forward pass only.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Forward, loss, backward and optimizer step.
    Train,
    /// Forward only, without autograd.
    Infer,
}

impl Mode {
    /// Every mode, as a form offers them.
    pub const ALL: [Self; 2] = [Self::Train, Self::Infer];

    /// Parses `train` or `infer`.
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        match text.trim().to_ascii_lowercase().as_str() {
            "train" | "training" => Ok(Self::Train),
            "infer" | "inference" | "eval" => Ok(Self::Infer),
            _ => Err(Invalid(format!("mode {text:?} is not train or infer"))),
        }
    }

    /// `train` or `infer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Train => "train",
            Self::Infer => "infer",
        }
    }
}

/// Which batches the sweep visits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BatchPlan {
    /// Exactly these batches, ascending; the sweep stops at the first that fails.
    Explicit { batches: Vec<u32> },
    /// Double from `start` until OOM, the budget or `max`, then bisect the boundary. A `max` of 0
    /// leaves the limit to the worker's default for the device.
    Search { start: u32, max: u32 },
}

/// Parses `1,2,4,8` into a sorted, de-duplicated list of positive batches.
pub fn parse_batches(text: &str) -> Result<Vec<u32>, Invalid> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let b: u32 = part.parse().map_err(|_| {
            let digits = !part.is_empty() && part.bytes().all(|c| c.is_ascii_digit());
            Invalid(if digits {
                format!(
                    "batch {part} in {text:?} is too large: a batch is at most {}",
                    u32::MAX
                )
            } else {
                format!(
                    "batch {part:?} in {text:?} is not a positive whole number; write e.g. 1,2,4,8"
                )
            })
        })?;
        if b == 0 {
            return Err(Invalid(
                "a batch of 0 cannot run; batches start at 1".into(),
            ));
        }
        out.push(b);
    }
    if out.is_empty() {
        return Err(Invalid(format!(
            "no batches in {text:?}; write e.g. 1,2,4,8"
        )));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Parses an input shape of one sample, `3x224x224` or `3,224,224`, into positive dimensions.
pub fn parse_shape(text: &str) -> Result<Vec<i64>, Invalid> {
    let bad = || {
        Invalid(format!(
            "input shape {text:?} is not a list of positive sizes; write one sample's shape without the batch, e.g. 3x224x224"
        ))
    };
    let dims: Vec<i64> = text
        .split(['x', 'X', ','])
        .map(|p| p.trim().parse::<i64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if dims.is_empty() || dims.iter().any(|d| *d <= 0) {
        return Err(bad());
    }
    Ok(dims)
}

/// Everything the worker needs to run one sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRequest {
    /// `auto`, `cpu`, `mps`, `cuda` or `cuda:N`.
    pub device: String,
    /// A built-in workload name or a path to a TorchScript `.pt` file.
    pub workload: String,
    /// Input shape of one sample (without the batch), e.g. `[3, 224, 224]`; `None` for the default.
    pub input_shape: Option<Vec<i64>>,
    pub dtype: Dtype,
    pub mode: Mode,
    pub plan: BatchPlan,
    pub budget: BudgetSpec,
    /// Timed steps per point; `None` lets the worker choose from the step time.
    pub steps: Option<u32>,
    /// Intra-op threads; `None` keeps libtorch's default.
    pub threads: Option<u32>,
    /// When false, points predicted over budget are run anyway (to verify a prediction).
    pub predict: bool,
    /// Points an earlier worker of the same run already finished; the planner continues from
    /// them (a supervisor restarts a worker it had to stop).
    #[serde(default)]
    pub prior: Vec<Point>,
    /// Inputs made on the host and copied to the device every step (the data phase), as a data
    /// loader without pinned memory would; `false` (the default) makes them once on the device,
    /// so a point measures the model and not the host's memory bandwidth.
    #[serde(default)]
    pub host_inputs: bool,
}

/// How one point ended.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointStatus {
    /// Measured.
    Ok,
    /// The device ran out of memory.
    Oom,
    /// Predicted or measured above the memory budget; a predicted one was not run.
    OverBudget,
    /// Any other failure (the message says which).
    Error,
}

impl PointStatus {
    /// The wire name (`ok`, `oom`, `over_budget`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Oom => "oom",
            Self::OverBudget => "over_budget",
            Self::Error => "error",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ok" => Some(Self::Ok),
            "oom" => Some(Self::Oom),
            "over_budget" => Some(Self::OverBudget),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// One measured (or refused) batch size.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub batch: u32,
    pub status: PointStatus,
    /// Samples per second over the timed steps (batch / p50 step time is not used: this is
    /// total samples over total timed wall time).
    pub samples_per_s: Option<f64>,
    pub step_ms_p50: Option<f64>,
    pub step_ms_p95: Option<f64>,
    /// Host preparation plus the copy to the device, per step.
    pub data_ms: Option<f64>,
    /// Forward pass and loss, per step.
    pub forward_ms: Option<f64>,
    /// Backward pass and optimizer step, per step (0 in `infer` mode).
    pub backward_ms: Option<f64>,
    /// Peak bytes held by live tensors on the accelerator (allocator stats), reset per point.
    pub peak_allocated_bytes: Option<u64>,
    /// Peak bytes the accelerator's caching allocator held, reset per point.
    pub peak_reserved_bytes: Option<u64>,
    /// Peak resident memory of the worker process during this point.
    pub peak_process_bytes: Option<u64>,
    /// The memory figure the budget applies to (reserved on accelerators, process on the CPU).
    pub peak_bytes: Option<u64>,
    /// What the planner predicted for `peak_bytes` before running, when it could.
    pub predicted_peak_bytes: Option<u64>,
    pub warmup_steps: u32,
    pub timed_steps: u32,
    /// Floating-point operations per sample of one step, where the workload knows them.
    pub flops_per_sample: Option<f64>,
    /// Why the point is not `ok`.
    pub message: Option<String>,
    /// Mean accelerator utilisation (0–1) while the point ran, sampled by the supervisor
    /// (NVML through `nvidia-smi`, macOS IOAccelerator "Device Utilization %"); `None` when
    /// not sampled (CPU runs, older ledgers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_busy: Option<f64>,
    /// Seconds spent in every step the point ran: its first step at the new shape, warm-up,
    /// timed and split steps. The rest of a sweep's wall time is the tool's own cost (start,
    /// planning, making inputs, freeing memory between points). `None` from older workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_s: Option<f64>,
    /// Seconds of the point's first step, which allocates memory and picks kernels for the new
    /// shape and is never timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_step_s: Option<f64>,
    /// The spread of the timed steps: their coefficient of variation (0.05: 5 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_cv: Option<f64>,
    /// What the rest of the machine did while the point was timed (local sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::pointload::PointLoad>,
    /// The machine's state while its steps were timed: thermal, power source, power, energy
    /// (local sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub conditions: Option<crate::conditions::TimedConditions>,
    /// Seconds of its timed steps, and why timing stopped there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_until: Option<TimedUntil>,
    /// The samples/s this batch first measured, when that figure broke the curve's shape (a
    /// drop between two rises) and the point was measured again; the point's figures are the
    /// second measurement's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remeasured_from: Option<f64>,
}

/// Adds `p` to a sweep's `points`, or, when it is a batch measured again, puts it in the place of
/// that batch's first measurement; returns its index.
pub fn upsert_point(points: &mut Vec<Point>, p: Point) -> usize {
    let again = p
        .remeasured_from
        .and_then(|_| points.iter().position(|q| q.batch == p.batch));
    match again {
        Some(i) => {
            points[i] = p;
            i
        }
        None => {
            points.push(p);
            points.len() - 1
        }
    }
}

/// Why a point's timing stopped where it did.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimedUntil {
    /// The target time was reached and the mean was known within ±5 % by then.
    Target,
    /// The steps varied, so it was timed past the target until the mean was known within ±5 %.
    Known,
    /// Still not known within ±5 % at the per-point cap (4× the target).
    Cap,
    /// The request fixed the number of timed steps (`--steps`).
    Steps,
}

impl Point {
    /// A point that did not produce measurements.
    pub fn failed(batch: u32, status: PointStatus, message: impl Into<String>) -> Self {
        Self {
            batch,
            status,
            samples_per_s: None,
            step_ms_p50: None,
            step_ms_p95: None,
            data_ms: None,
            forward_ms: None,
            backward_ms: None,
            peak_allocated_bytes: None,
            peak_reserved_bytes: None,
            peak_process_bytes: None,
            peak_bytes: None,
            predicted_peak_bytes: None,
            warmup_steps: 0,
            timed_steps: 0,
            flops_per_sample: None,
            message: Some(message.into()),
            gpu_busy: None,
            steps_s: None,
            first_step_s: None,
            step_cv: None,
            load: None,
            conditions: None,
            timed_s: None,
            timed_until: None,
            remeasured_from: None,
        }
    }

    /// The half-width of its throughput's 95 % confidence interval, as a share (from the
    /// spread of its timed steps).
    pub fn ci_share(&self) -> Option<f64> {
        crate::stats::ci_share(self.step_cv?, self.timed_steps as usize)
    }

    /// How long it was timed and why, in words: "0.26 s", "0.93 s, timed longer until known
    /// within ±5 %", "1.00 s, the per-point cap, still ±9 %"; `None` for a point that was not
    /// timed.
    pub fn timing_note(&self) -> Option<String> {
        let s = self.timed_s?;
        let mut note = match self.timed_until {
            Some(TimedUntil::Known) => format!("{s:.2} s, timed longer until known within ±5 %"),
            Some(TimedUntil::Cap) => format!(
                "{s:.2} s, the per-point cap, still ±{:.0} %",
                self.ci_share().unwrap_or(0.0) * 100.0
            ),
            Some(TimedUntil::Steps) => format!("{s:.2} s, {} steps as asked", self.timed_steps),
            Some(TimedUntil::Target) | None => format!("{s:.2} s"),
        };
        if let Some(first) = self.remeasured_from {
            note.push_str(&format!(
                "; measured again: its first {} samples/s broke the curve",
                crate::stats::sig3(first)
            ));
        }
        Some(note)
    }

    /// The ± share of its throughput where it is wider than a figure to trust
    /// ([`crate::stats::KNOWN_WITHIN`]); `None` for a quiet point and one not measured.
    pub fn noisy_share(&self) -> Option<f64> {
        (self.status == PointStatus::Ok)
            .then(|| self.ci_share())
            .flatten()
            .filter(|c| *c > crate::stats::KNOWN_WITHIN)
    }

    /// What was running beside it while it was timed (CPU load, memory pressure, the accelerator
    /// shared), one line per cause; empty for a point timed on a quiet machine.
    pub fn busy_cautions(&self) -> Vec<String> {
        if self.status != PointStatus::Ok {
            return Vec::new();
        }
        let mut out = self
            .load
            .as_ref()
            .map(|l| l.warnings(self.batch))
            .unwrap_or_default();
        if let Some(c) = &self.conditions {
            out.extend(c.warnings_for(&format!("batch {}", self.batch)));
        }
        out
    }

    /// Joules per sample: the mean power while its steps were timed over its throughput.
    pub fn joules_per_sample(&self) -> Option<f64> {
        let c = self.conditions.as_ref()?;
        c.joules_per_sample_at(self.samples_per_s?)
    }

    /// Why its figure should be read with care, one line per cause: measured beside other work
    /// (CPU, memory pressure, the accelerator shared) or still noisy at its cap. Empty for a
    /// point to trust, and for one that was not measured.
    pub fn cautions(&self) -> Vec<String> {
        let mut out = self.busy_cautions();
        if let Some(ci) = self.noisy_share() {
            out.push(format!(
                "batch {}'s throughput is known only within ±{:.1} % (its {} timed steps varied by {:.0} %, p95/p50 {:.2}): read it as a rough figure",
                self.batch,
                ci * 100.0,
                self.timed_steps,
                self.step_cv.unwrap_or(0.0) * 100.0,
                match (self.step_ms_p95, self.step_ms_p50) {
                    (Some(a), Some(b)) if b > 0.0 => a / b,
                    _ => f64::NAN,
                }
            ));
        }
        out
    }
}

/// What the worker found out about its device and workload before measuring.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub headroom_version: String,
    pub libtorch: String,
    /// The resolved device, e.g. `cuda:0`.
    pub device: String,
    /// A human name for it, e.g. the GPU model or the CPU brand.
    pub device_name: String,
    /// Total memory of the device (RAM for the CPU).
    pub capacity_bytes: u64,
    /// Memory available to the run when it started.
    pub available_bytes: u64,
    /// The budget in bytes after resolving the request's spec.
    pub budget_bytes: u64,
    pub threads: u32,
    pub workload: String,
    pub input_shape: Vec<i64>,
    pub parameters: u64,
    pub pid: u32,
}

/// The sweep's answer.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    /// The batch with the highest samples/s.
    pub best_batch: Option<u32>,
    pub best_samples_per_s: Option<f64>,
    /// Smallest batch within [`crate::summary::KNEE_SHARE`] of the best throughput.
    pub knee_batch: Option<u32>,
    /// Largest measured batch that stayed within the budget.
    pub max_fit_batch: Option<u32>,
    /// Smallest batch that failed (OOM or over budget), bounding `max_fit_batch` from above.
    pub first_failing_batch: Option<u32>,
    /// The largest batch the memory line puts within the budget, where no start ran it: the
    /// knee was found below it and the batch past it was refused on its prediction (a sweep
    /// over the user's script, [`crate::planner::Planner::unverified_fit`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub predicted_fit_batch: Option<u32>,
    /// What stopped the search: `oom`, `budget`, `max_batch`, `list`, `error`.
    pub limit: String,
    /// The batch Headroom recommends.
    pub recommended_batch: Option<u32>,
    /// Why, in one sentence with the numbers.
    pub reason: String,
    pub peak_bytes_at_recommended: Option<u64>,
    /// The throughput was still rising at the largest batch measured: no knee is known (the
    /// curve's top is not one), and the largest batch is recommended only as the best so far.
    #[serde(default)]
    pub still_rising: bool,
    /// Why the answer is uncertain, when points it rests on were measured beside other work or
    /// stayed noisy (their warnings name the cause).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertain: Option<String>,
    /// The most energy-efficient batch against the recommended one, where the points carry
    /// their energy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub energy: Option<crate::energy::EnergyTradeoff>,
    /// The answer in one line with its doubt: "batch 64 · 10.0 k samples/s · 665 MiB · ±17 %,
    /// machine busy" ([`crate::summary::headline`]); `None` without a recommendation, and in
    /// summaries recorded before it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub headline: Option<String>,
    /// The per-point cautions in one line: "5 of 7 points noisy (±10–19 %): timed beside other
    /// work" ([`crate::summary::caution_line`]); `None` when no point carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub caution_line: Option<String>,
}

/// Progress within one point.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Making the point's input batches, before the first step.
    Setup,
    Warmup,
    Timed,
    Split,
}

impl Phase {
    /// The phase in words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Setup => "preparing inputs",
            Self::Warmup => "warm-up",
            Self::Timed => "timed steps",
            Self::Split => "phase split",
        }
    }
}

/// Where a worker is, for people: `batch 4: timed steps 3/10`.
pub fn progress_line(batch: u32, phase: Phase, step: u32, of: u32) -> String {
    if of > 0 {
        format!("batch {batch}: {} {step}/{of}", phase.describe())
    } else if step > 0 {
        // A script's steps: how many are known, not how many there will be.
        format!("batch {batch}: {}, step {step}", phase.describe())
    } else {
        format!("batch {batch}: {}", phase.describe())
    }
}

/// What to release at each epoch boundary.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Release {
    None,
    /// Python's `gc.collect()`; the worker has no Python heap, so for its own workloads this
    /// releases nothing beyond what Rust drops at once (kept so runs name the same policy).
    Gc,
    /// `empty_cache`: the allocator returns its cached blocks to the device.
    EmptyCache,
    Both,
}

impl Release {
    /// Every policy, as a form offers them.
    pub const ALL: [Self; 4] = [Self::None, Self::Gc, Self::EmptyCache, Self::Both];

    /// Parses `none`, `gc`, `empty-cache`, `both`.
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        match text.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "none" => Ok(Self::None),
            "gc" => Ok(Self::Gc),
            "empty-cache" => Ok(Self::EmptyCache),
            "both" => Ok(Self::Both),
            other => Err(Invalid(format!(
                "unknown release policy {other:?}; use none, gc, empty-cache or both"
            ))),
        }
    }

    /// The policy's name as the command line takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gc => "gc",
            Self::EmptyCache => "empty-cache",
            Self::Both => "both",
        }
    }

    pub fn empties_cache(self) -> bool {
        matches!(self, Self::EmptyCache | Self::Both)
    }
}

/// `headroom epochs`: train one batch size for several epochs and measure memory at each end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochsRequest {
    pub device: String,
    pub workload: String,
    pub input_shape: Option<Vec<i64>>,
    pub dtype: Dtype,
    pub batch: u32,
    pub epochs: u32,
    pub steps_per_epoch: u32,
    pub release: Release,
    /// Retain this many MiB of device tensors per epoch, a true leak to prove the detector.
    pub leak_mib: u32,
    pub threads: Option<u32>,
}

impl EpochsRequest {
    /// The counts a run needs, checked once for every caller (the CLI's and the app's inputs,
    /// and the worker for a request from anywhere else).
    pub fn check(&self) -> Result<(), Invalid> {
        if self.batch == 0 || self.epochs == 0 || self.steps_per_epoch == 0 {
            return Err(Invalid(
                "--batch, --epochs and --steps-per-epoch must all be 1 or more".into(),
            ));
        }
        Ok(())
    }
}

/// A job for the worker: one JSON line on its stdin. A bare [`SweepRequest`] (protocol 1's
/// only request) is still understood as a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "job", rename_all = "snake_case")]
pub enum Job {
    Sweep(SweepRequest),
    Epochs(EpochsRequest),
    Profile(ProfileRequest),
    Numerics(NumericsRequest),
}

/// `headroom numerics --workload W`: a built-in model or a TorchScript file on `device` in
/// `dtype` against a CPU copy in f32 with the same weights and the same batch, layer by layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumericsRequest {
    pub device: String,
    pub workload: String,
    pub input_shape: Option<Vec<i64>>,
    /// What the compared copy's weights and inputs are cast to.
    pub dtype: Dtype,
    pub batch: u32,
    /// The largest relative error that passes.
    pub tolerance: f64,
    pub threads: Option<u32>,
    /// A layer whose output the compared side scales by 1.04 (the tests' wrong layer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturb: Option<String>,
    /// The f32 reference on `device` too (the dtype's own difference there), not on the CPU.
    #[serde(default)]
    pub reference_on_device: bool,
}

/// `headroom profile`: one batch, where its time goes — data, forward, backward — and each
/// top-level layer's forward time against its share of the FLOPs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRequest {
    pub device: String,
    pub workload: String,
    pub input_shape: Option<Vec<i64>>,
    pub dtype: Dtype,
    pub batch: u32,
    /// Timed repetitions of the per-layer pass (after two untimed ones).
    pub reps: u32,
    pub threads: Option<u32>,
}

/// One top-level layer's forward time at the profiled batch.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerTime {
    pub name: String,
    /// Median forward time of the layer alone, synchronised before and after, ms.
    pub forward_ms: f64,
    /// Its share of the summed layer times.
    pub time_share: f64,
    /// Its forward FLOPs for the batch (matrix products; estimated from a TorchScript module's
    /// weights), when known.
    pub flops: Option<f64>,
    /// Its share of the summed FLOPs, when every layer's are known.
    pub flops_share: Option<f64>,
    pub output_shape: Vec<i64>,
}

/// What `profile` found.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileReport {
    pub batch: u32,
    /// The training step at that batch, split as a sweep point splits it.
    pub point: Point,
    /// In order; empty when the model's layers cannot be taken apart (`layers_note` says why).
    pub layers: Vec<LayerTime>,
    pub layers_note: Option<String>,
}

impl ProfileReport {
    /// The layer that takes at least `share` of the forward time and at least twice its share of
    /// the FLOPs (when known): one slow layer, the mark of a kernel gap.
    pub fn slow_layer(&self, share: f64) -> Option<&LayerTime> {
        self.layers
            .iter()
            .filter(|l| l.time_share >= share)
            .find(|l| l.flops_share.is_none_or(|f| l.time_share >= 2.0 * f))
    }
}

impl Job {
    /// Parses the worker's request line.
    pub fn from_line(line: &str) -> Result<Self, Invalid> {
        serde_json::from_str::<Self>(line)
            .or_else(|_| serde_json::from_str::<SweepRequest>(line).map(Self::Sweep))
            .map_err(|e| Invalid(format!("the request is not a job: {e}")))
    }
}

/// One line of the worker's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Hello(Hello),
    Progress {
        batch: u32,
        phase: Phase,
        step: u32,
        of: u32,
    },
    Point(Point),
    /// Memory and speed at the end of one epoch (`headroom epochs`).
    Epoch(crate::epochs::EpochSample),
    /// The result of `headroom profile`.
    Profile(ProfileReport),
    /// The result of `headroom numerics --workload`.
    Numerics(crate::numerics::NumericsReport),
    Warning {
        message: String,
    },
    Result(SweepSummary),
    /// The run cannot continue; `code` is stable for programs to branch on.
    Error {
        code: crate::error::ErrorCode,
        message: String,
    },
    /// "Still here": written every [`HEARTBEAT`] from the worker's own thread, so a parent can
    /// tell a long step from a hung process.
    Heartbeat,
}

/// How often a worker writes its heartbeat.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(2);

impl Event {
    /// One JSON line, without the newline.
    pub fn to_line(&self) -> String {
        // Serialising these plain structs cannot fail.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"event":"error","code":"internal","message":"serialise: {e}"}}"#)
        })
    }

    /// Parses one line of worker output.
    pub fn from_line(line: &str) -> Result<Self, Invalid> {
        serde_json::from_str(line).map_err(|e| {
            Invalid(format!(
                "worker sent a line that is not a protocol event ({e}): {line:.200}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_worker_error_with_a_code_this_headroom_does_not_know_still_carries_its_message() {
        use crate::error::ErrorCode;
        // A worker's error with a code a newer Headroom added: the event still parses.
        let e = Event::from_line(
            r#"{"event":"error","code":"gpu_on_fire","message":"the GPU is on fire"}"#,
        )
        .unwrap();
        assert_eq!(
            e,
            Event::Error {
                code: ErrorCode::Internal,
                message: "the GPU is on fire".into()
            }
        );
    }

    use super::*;

    #[test]
    fn events_round_trip_as_tagged_lines() {
        let e = Event::Progress {
            batch: 8,
            phase: Phase::Timed,
            step: 3,
            of: 10,
        };
        let line = e.to_line();
        assert_eq!(
            line,
            r#"{"event":"progress","batch":8,"phase":"timed","step":3,"of":10}"#
        );
        assert_eq!(Event::from_line(&line).ok(), Some(e));
        let p = Event::Point(Point::failed(64, PointStatus::Oom, "CUDA out of memory"));
        assert_eq!(Event::from_line(&p.to_line()).ok(), Some(p));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Event::from_line("Segmentation fault").is_err());
        assert!(Event::from_line(r#"{"event":"nope"}"#).is_err());
    }

    #[test]
    fn shapes_parse() {
        assert_eq!(parse_shape("3x224x224").ok(), Some(vec![3, 224, 224]));
        assert_eq!(parse_shape("784").ok(), Some(vec![784]));
        assert_eq!(parse_shape("3,32,32").ok(), Some(vec![3, 32, 32]));
        assert!(parse_shape("3x0x2").is_err());
        assert!(parse_shape("axb").is_err());
        assert!(parse_shape("").is_err());
    }

    #[test]
    fn batches_parse_sorted_and_refuse_zero() {
        assert_eq!(parse_batches("8, 2,4,2").ok(), Some(vec![2, 4, 8]));
        assert!(parse_batches("0,1").is_err());
        assert!(parse_batches("a,b").is_err());
        assert!(parse_batches(" , ").is_err());
    }
}
