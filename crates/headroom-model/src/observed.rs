//! What the observer of a user's training reports ([`Event`], one JSON line each) and their sum
//! ([`Observation`] → [`Observed`]): iterations, batch and accumulation, DataLoader settings,
//! waits and stalls, epochs, device memory. Pure: headroom-core's `instrument` holds the observer
//! itself and the socket these events arrive on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What to try for a stalled DataLoader, by its start method and its workers.
pub fn stall_triage(stall: &LoaderStall, start_method: Option<&str>) -> String {
    let who = if stall.workers == 0 {
        "The training process itself is stuck in the dataset's __getitem__ (a lock, a network \
         read): `py-spy dump --pid PID` shows where."
            .to_owned()
    } else if stall.alive < stall.workers {
        format!(
            "{} worker(s) died (the OOM killer, a crash in native code) while the loader waits \
             on them: check `dmesg`/Console for a kill, and lower num_workers or the batch.",
            stall.workers - stall.alive
        )
    } else {
        "Its workers live but give nothing: a deadlock in them, or a read that never returns."
            .to_owned()
    };
    let method = match start_method {
        Some("fork") => "Started by fork: a worker forked while another thread held a lock (a \
             tokenizer's thread pool, OpenMP, a logging thread) can wait forever; use \
             multiprocessing_context=\"spawn\" (or \"forkserver\") on the DataLoader, or \
             TOKENIZERS_PARALLELISM=false. On macOS fork is unsafe with Apple's frameworks and \
             spawn is the default for that reason."
            .to_owned(),
        Some("spawn") | Some("forkserver") => format!(
            "Started by {}: each worker imports your script again and unpickles the dataset, \
             so starts are slow (each epoch, unless persistent_workers=True) and a script \
             without `if __name__ == \"__main__\":` runs its training again in every worker.",
            start_method.unwrap_or_default()
        ),
        _ => "The start method was not seen.".to_owned(),
    };
    format!(
        "{who} {method} Give the DataLoader a timeout= to get an error instead of a hang, and \
         try num_workers=0 to tell the dataset from the workers."
    )
}

/// Host-to-device copies taking this share of the step time make `pin_memory` worth advising.
pub const COPIES_MATTER: f64 = 0.10;

/// Device memory as the process's allocator reports it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemory {
    /// `cuda:0`, `mps`, `cpu`.
    pub device: String,
    /// Bytes in live tensors (CUDA's allocated, MPS's current allocated).
    #[serde(default)]
    pub allocated: Option<u64>,
    /// CUDA: bytes the caching allocator holds (allocated and cached).
    #[serde(default)]
    pub reserved: Option<u64>,
    /// CUDA: the most allocated since the previous step.
    #[serde(default)]
    pub peak: Option<u64>,
    /// MPS: what the Metal driver holds for the process.
    #[serde(default)]
    pub driver: Option<u64>,
    /// MPS: the working-set size Metal recommends.
    #[serde(default)]
    pub recommended_max: Option<u64>,
    /// CUDA: the most the caching allocator held since the previous step.
    #[serde(default)]
    pub reserved_peak: Option<u64>,
    /// CUDA: the device's size and what was free on it, at the first step only.
    #[serde(default)]
    pub total: Option<u64>,
    #[serde(default)]
    pub free: Option<u64>,
}

impl DeviceMemory {
    /// Bytes the allocator keeps beyond the live tensors (CUDA reserved, MPS driver).
    pub fn cached(&self) -> Option<u64> {
        let held = self.reserved.or(self.driver)?;
        Some(held.saturating_sub(self.allocated.unwrap_or(0)))
    }

    /// The most the allocator held for this process at this reading (CUDA's reserved peak,
    /// MPS's driver memory): what a device's budget is measured against.
    pub fn held(&self) -> Option<u64> {
        [self.reserved_peak, self.reserved, self.driver]
            .into_iter()
            .flatten()
            .max()
            .or_else(|| self.high())
    }

    /// The most this process held on the device at this reading.
    pub fn high(&self) -> Option<u64> {
        match (self.peak, self.allocated) {
            (Some(p), Some(a)) => Some(p.max(a)),
            (p, a) => p.or(a),
        }
    }
}

/// One event from an observed process. `pid` and `t` (seconds since the Unix epoch) come with
/// every one.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Event {
    /// torch was imported.
    Hello {
        pid: u32,
        t: f64,
        torch: String,
        #[serde(default)]
        mps_built: bool,
        #[serde(default)]
        mps_available: bool,
        #[serde(default)]
        start_method: Option<String>,
    },
    /// An optimizer step ended. `ms` is the time since the previous one (none for the first),
    /// `data_ms` the time spent waiting for DataLoader batches since then, `backward` the
    /// backward calls since then.
    Step {
        pid: u32,
        t: f64,
        n: u64,
        #[serde(default)]
        ms: Option<f64>,
        #[serde(default)]
        data_ms: f64,
        /// Time in host-to-device copies of CPU tensors since the previous step.
        #[serde(default)]
        copy_ms: f64,
        #[serde(default)]
        backward: u32,
        #[serde(default)]
        batch: Option<u64>,
        #[serde(default)]
        mem: Option<DeviceMemory>,
        /// `train`, or `infer`: an iteration of a loop that never called backward (a training
        /// iteration, once one comes, makes those void).
        #[serde(default)]
        kind: IterationKind,
        /// The different batches trained in it (accumulation when above 1); an older observer
        /// sent none (its `backward` stood for them).
        #[serde(default)]
        micro: Option<u32>,
        /// Optimizer steps in it (two in a GAN's), and how many of them a GradScaler skipped.
        #[serde(default)]
        opt: u32,
        #[serde(default)]
        skipped: u32,
        /// Host syncs the program asked for in it (`.item()`, `.tolist()`, a device tensor's
        /// `.cpu()`), and the milliseconds they blocked.
        #[serde(default)]
        syncs: u32,
        #[serde(default)]
        sync_ms: f64,
        /// Time in evaluation passes since the previous iteration (a DataLoader's pass in
        /// which no training iteration ran: the loop's validation), left out of `ms`.
        #[serde(default)]
        eval_ms: f64,
    },
    /// The loop's first batch-sized work (its first batch asked for, module call, backward or
    /// step): where its first epoch's clock starts when epochs come from output lines.
    Begin { pid: u32, t: f64 },
    /// A DataLoader pass in which training iterations ran ended (after the iteration of its
    /// last batch, or when the loader was iterated anew). `start`: when the pass began.
    Epoch {
        pid: u32,
        t: f64,
        n: u32,
        steps: u64,
        #[serde(default)]
        start: Option<f64>,
        #[serde(default)]
        mem: Option<DeviceMemory>,
        /// With a release policy: what the allocator kept beyond live tensors before the
        /// release (`mem` is read after it).
        #[serde(default)]
        cache_before: Option<u64>,
    },
    /// A DataLoader's settings, at its first iteration.
    Loader {
        pid: u32,
        t: f64,
        #[serde(flatten)]
        settings: LoaderSettings,
    },
    /// A feature seen in use: `autocast` ("cpu:bfloat16"), `compile`, `checkpoint`, `seed`.
    Flag {
        pid: u32,
        t: f64,
        name: String,
        value: serde_json::Value,
    },
    /// A warning PyTorch gave (CPU fallbacks).
    Warning { pid: u32, t: f64, message: String },
    /// The program ended on an out-of-memory error.
    Oom { pid: u32, t: f64, message: String },
    /// The process is exiting.
    End {
        pid: u32,
        t: f64,
        #[serde(default)]
        checkpoints: u64,
    },
    /// The observer failed to hook in or stopped at a fault of its own (the program runs on,
    /// unobserved).
    ProbeError { pid: u32, t: f64, message: String },
    /// The DataLoader has given no batch for `waited_s` seconds (past the stall threshold),
    /// with `alive` of its `workers` worker processes alive; `step` optimizer steps ran before.
    Stall {
        pid: u32,
        t: f64,
        waited_s: f64,
        #[serde(default)]
        workers: u32,
        #[serde(default)]
        alive: u32,
        #[serde(default)]
        step: u64,
    },
    /// A reported stall ended: the batch came after `waited_s` seconds in all.
    StallEnd { pid: u32, t: f64, waited_s: f64 },
    /// An event this Headroom does not know (a newer observer): ignored.
    #[serde(other)]
    Unknown,
}

impl Event {
    /// Parses one line; `None` for a line that is not an event.
    pub fn parse(line: &str) -> Option<Self> {
        serde_json::from_str(line).ok()
    }

    /// When it happened, seconds since the Unix epoch (none for an unknown event).
    pub fn time(&self) -> Option<f64> {
        match self {
            Self::Hello { t, .. }
            | Self::Step { t, .. }
            | Self::Epoch { t, .. }
            | Self::Loader { t, .. }
            | Self::Flag { t, .. }
            | Self::Warning { t, .. }
            | Self::Oom { t, .. }
            | Self::End { t, .. }
            | Self::ProbeError { t, .. }
            | Self::Stall { t, .. }
            | Self::StallEnd { t, .. }
            | Self::Begin { t, .. } => Some(*t),
            Self::Unknown => None,
        }
    }
}

/// What kind of loop an iteration belongs to.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationKind {
    /// A training iteration: it called backward or stepped an optimizer.
    #[default]
    Train,
    /// A forward pass over a batch with no backward anywhere in the loop so far.
    Infer,
}

/// A DataLoader's settings as the program made them.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoaderSettings {
    pub num_workers: u32,
    pub pin_memory: bool,
    pub persistent_workers: bool,
    /// `fork`, `spawn` or `forkserver` (none: the platform's default, not set by the program).
    #[serde(default)]
    pub start_method: Option<String>,
    pub worker_init_fn: bool,
    #[serde(default)]
    pub batch_size: Option<u64>,
}

/// One operator's times over a profiler window (torch.profiler's averages by name):
/// microseconds, summed over its calls.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledOp {
    pub name: String,
    pub calls: u64,
    /// Host time in the operator itself, and with what it called.
    pub self_cpu_us: f64,
    pub cpu_us: f64,
    /// Device time of the kernels it launched itself, and with what it called.
    #[serde(default)]
    pub self_device_us: f64,
    #[serde(default)]
    pub device_us: f64,
    /// A device kernel or copy, not a host operator.
    #[serde(default)]
    pub on_device: bool,
}

/// What kind of wait a profiled operator is (see [`ProfileWindow::waits`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// The host waited for the device's queue (`.item()`, a synchronize).
    Sync,
    /// The driver's launch and copy calls: the host feeding the device.
    Launch,
    /// An operator that ran on the host only while the model is on the device: unsupported
    /// there (a CPU fallback on MPS) or host work in the loop.
    Host,
}

/// One operator of a window in a role: its share and, for a wait, its kind.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpShare {
    pub name: String,
    pub calls: u64,
    /// Milliseconds over the window: device time for a device run's top operators, host time
    /// otherwise.
    pub ms: f64,
    /// Of the device's busy time (a device run's top), else of the window's wall time.
    pub share: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub wait: Option<WaitKind>,
}

/// `run --profile-window N`: torch.profiler over N training iterations after a warm-up, in
/// the process that trains (CPU activity, and the device's on CUDA).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileWindow {
    /// Iterations profiled, and asked for (fewer: the program ended inside the window).
    #[serde(default)]
    pub iterations: u32,
    #[serde(default)]
    pub asked: u32,
    /// The iteration it began after.
    #[serde(default)]
    pub warmup: u32,
    /// Its wall time, and the time writing the trace and the summary took after it.
    #[serde(default)]
    pub window_s: f64,
    #[serde(default)]
    pub write_s: f64,
    /// A typical iteration before the window, ms (what the window's iterations would have
    /// taken unprofiled).
    #[serde(default)]
    pub before_ms: Option<f64>,
    #[serde(default)]
    pub device: String,
    /// The Chrome-trace file (open in Perfetto or chrome://tracing).
    #[serde(default)]
    pub trace: Option<String>,
    /// The program ended inside the window.
    #[serde(default)]
    pub cut: bool,
    /// The operators the observer kept (the heaviest by either clock, and every wait).
    #[serde(default)]
    pub ops: Vec<ProfiledOp>,
    /// Why there is no profile (the profiler could not start or stop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub error: Option<String>,
}

/// Host calls that wait for the device.
const SYNC_OPS: [&str; 3] = ["aten::_local_scalar_dense", "aten::item", "cudaMemcpy"];

/// The least share of the window a host operator takes to be named a wait.
pub const WAIT_SHARE: f64 = 0.02;

impl ProfileWindow {
    /// On an accelerator (the model's parameters there), not the CPU.
    pub fn on_accelerator(&self) -> bool {
        !self.device.is_empty() && self.device != "cpu"
    }

    fn window_us(&self) -> f64 {
        (self.window_s * 1e6).max(1.0)
    }

    /// The profiler recorded the device's own activity (CUDA's kernels): on MPS it records
    /// the host's only, where the device's work is queued and a long host time is a wait.
    pub fn has_device_time(&self) -> bool {
        self.ops.iter().any(|o| o.self_device_us > 0.0)
    }

    /// The heaviest host operators: by the device time of the kernels they launched where the
    /// profiler recorded it (the share of all kernel time), else by their own host time (the
    /// share of the window).
    pub fn top(&self, n: usize) -> Vec<OpShare> {
        let host = self
            .ops
            .iter()
            .filter(|o| !o.on_device && !runtime(&o.name));
        let mut rows: Vec<OpShare> = if self.has_device_time() {
            let kernels: f64 = self
                .ops
                .iter()
                .filter(|o| o.on_device)
                .map(|o| o.self_device_us)
                .sum();
            let ops: Vec<&ProfiledOp> = host.filter(|o| o.self_device_us > 0.0).collect();
            let total = if kernels > 0.0 {
                kernels
            } else {
                ops.iter().map(|o| o.self_device_us).sum()
            };
            ops.into_iter()
                .map(|o| OpShare {
                    name: o.name.clone(),
                    calls: o.calls,
                    ms: o.self_device_us / 1e3,
                    share: (o.self_device_us / total.max(1.0)).min(1.0),
                    wait: None,
                })
                .collect()
        } else {
            host.map(|o| OpShare {
                name: o.name.clone(),
                calls: o.calls,
                ms: o.self_cpu_us / 1e3,
                share: (o.self_cpu_us / self.window_us()).min(1.0),
                wait: None,
            })
            .collect()
        };
        rows.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        rows.truncate(n);
        rows
    }

    /// On an accelerator: the host operators whose own host time is long (at least
    /// [`WAIT_SHARE`] of the window) against the device time they caused (under a tenth of
    /// it) — a sync, the driver feeding the device, or an operator the device did not run.
    /// Where the profiler recorded no device time (MPS), only the syncs can be told apart.
    pub fn waits(&self) -> Vec<OpShare> {
        if !self.on_accelerator() {
            return Vec::new();
        }
        let device_time = self.has_device_time();
        let window = self.window_us();
        let mut rows: Vec<OpShare> = self
            .ops
            .iter()
            .filter(|o| !o.on_device)
            .filter(|o| o.self_cpu_us >= WAIT_SHARE * window)
            .filter(|o| o.device_us < 0.1 * o.self_cpu_us)
            .filter_map(|o| {
                let kind = if SYNC_OPS.contains(&o.name.as_str()) || o.name.contains("Synchronize")
                {
                    WaitKind::Sync
                } else if !device_time {
                    return None;
                } else if runtime(&o.name) {
                    WaitKind::Launch
                } else {
                    WaitKind::Host
                };
                Some(OpShare {
                    name: o.name.clone(),
                    calls: o.calls,
                    ms: o.self_cpu_us / 1e3,
                    share: (o.self_cpu_us / window).min(1.0),
                    wait: Some(kind),
                })
            })
            .collect();
        rows.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        rows
    }

    /// What the window cost the run: its time and the trace's writing, less what its
    /// iterations would have taken unprofiled.
    pub fn cost_s(&self) -> Option<f64> {
        let before = self.before_ms?;
        Some((self.window_s + self.write_s - f64::from(self.iterations) * before / 1e3).max(0.0))
    }

    /// One paragraph for people: the window, its top operators and waits, the trace.
    pub fn describe(&self) -> String {
        if let Some(e) = &self.error {
            return format!("profiler window: none ({e})");
        }
        let pct = |s: f64| format!("{:.0} %", s * 100.0);
        let mut out = format!(
            "profiler window: {} iteration(s) after {} on {} ({:.2} s{}{})",
            self.iterations,
            self.warmup,
            self.device,
            self.window_s,
            self.cost_s().map_or_else(String::new, |c| format!(
                ", cost the run {c:.2} s with the trace"
            )),
            if self.cut {
                format!("; the program ended inside the window of {}", self.asked)
            } else {
                String::new()
            }
        );
        let of = if self.has_device_time() {
            "of the device time"
        } else {
            "of the window"
        };
        let top: Vec<String> = self
            .top(5)
            .iter()
            .map(|o| format!("{} {} ({} calls)", o.name, pct(o.share), o.calls))
            .collect();
        if !top.is_empty() {
            out.push_str(&format!("; top operators {of}: {}", top.join(", ")));
        }
        let waits: Vec<String> = self
            .waits()
            .iter()
            .map(|o| {
                let what = match o.wait {
                    Some(WaitKind::Sync) => "a sync",
                    Some(WaitKind::Launch) => "the host feeding the device",
                    _ => "host-only: unsupported on the device or host work",
                };
                format!("{} {} of the window ({what})", o.name, pct(o.share))
            })
            .collect();
        if !waits.is_empty() {
            out.push_str(&format!(
                "; long on the host, short on the device: {}",
                waits.join(", ")
            ));
        }
        if let Some(t) = &self.trace {
            out.push_str(&format!("; trace {t} (open it in https://ui.perfetto.dev)"));
        }
        out
    }
}

/// A driver call of the device's runtime (`cudaLaunchKernel`, `cudaMemcpyAsync`), not an
/// operator.
fn runtime(name: &str) -> bool {
    name.starts_with("cuda") || name.starts_with("cu") && !name.contains("::")
}

/// A DataLoader wait past the stall threshold (`headroom run --stall-after`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoaderStall {
    /// Optimizer steps that ran before it.
    pub after_step: u64,
    /// How long the wait lasted: to its end when `ended`, else to the last report.
    pub waited_s: f64,
    /// The loader's worker processes, and how many of them were alive when it was reported.
    pub workers: u32,
    pub alive: u32,
    /// The batch came in the end (a slow loader, not a hang).
    pub ended: bool,
}

impl LoaderStall {
    /// "no batch for 31 s after step 4, its 2 workers alive": for every reason that cites it.
    pub fn describe(&self) -> String {
        let workers = match (self.workers, self.alive) {
            (0, _) => "loading in the training process (num_workers=0)".to_owned(),
            (w, a) if a == w => format!("its {w} worker{} alive", if w == 1 { "" } else { "s" }),
            (w, a) => format!("{a} of its {w} workers alive"),
        };
        format!(
            "no batch for {:.0} s after step {}, {workers}{}",
            self.waited_s,
            self.after_step,
            if self.ended { ", then it went on" } else { "" }
        )
    }
}

/// What the observer saw, summed over the run (part of `run`'s result).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    /// torch's version, and MPS built and available, as the program's process saw them.
    pub torch_version: Option<String>,
    pub mps_built: Option<bool>,
    pub mps_available: Option<bool>,
    /// Processes that imported torch (the trainer, DataLoader workers started by spawn, ranks).
    pub processes: u32,
    /// Processes that ran optimizer steps (more than one: data-parallel ranks).
    pub stepping_processes: u32,
    /// Iterations of the main process (the first to iterate): training iterations, or
    /// inference iterations where the loop never trained ([`Observed::inference`]).
    pub steps: u64,
    /// The batch most iterations had (the first dimension of the first tensor of a DataLoader
    /// batch, else of the outermost module's fresh input); a partial last batch never decides.
    pub batch: Option<u64>,
    /// Different batches per iteration, median (gradient accumulation when above 1).
    pub accumulation: Option<u32>,
    /// The loop never called backward or stepped an optimizer: its iterations are forward
    /// passes over batches.
    #[serde(default)]
    pub inference: bool,
    /// Optimizer steps per training iteration, median: 0 for manual SGD on `.grad`, 2 for a
    /// GAN's.
    #[serde(default)]
    pub optimizer_steps: Option<u32>,
    /// Backward calls per training iteration, median (3 in a DCGAN's).
    #[serde(default)]
    pub backward_calls: Option<u32>,
    /// Optimizer steps a GradScaler skipped on inf/NaN gradients (their iterations count).
    #[serde(default)]
    pub skipped_steps: u64,
    /// Seconds from the run's start to the loop's first batch-sized work.
    #[serde(default)]
    pub began_s: Option<f64>,
    /// The share of step time spent copying CPU tensors to the device (steps after the first).
    pub copy_share: Option<f64>,
    /// Host syncs the program asks for in a typical iteration (`.item()`, `.tolist()`, a device
    /// tensor's `.cpu()`: the median count), the share of step time they blocked, and where the
    /// first was called (`train.py:42 .item()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syncs_per_step: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_share: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_site: Option<String>,
    /// The DataLoader that fed the steps (the first one the program iterated).
    pub loader: Option<LoaderSettings>,
    /// The multiprocessing start method when torch was imported.
    pub start_method: Option<String>,
    /// Autocast in use: `device:dtype` for each seen.
    pub autocast: Vec<String>,
    pub compiled: bool,
    pub checkpointing: bool,
    pub seed: Option<u64>,
    /// The device the optimizer's parameters live on.
    pub device: Option<String>,
    /// The most the device's allocator held for live tensors at any step, and its cache then.
    pub peak_device_bytes: Option<u64>,
    pub peak_device_cached_bytes: Option<u64>,
    /// The most the device's allocator held at any step, cache included ([`DeviceMemory::held`]).
    #[serde(default)]
    pub peak_device_held_bytes: Option<u64>,
    /// CUDA: the device's size and what was free on it when the program first stepped.
    #[serde(default)]
    pub device_total_bytes: Option<u64>,
    #[serde(default)]
    pub device_free_bytes: Option<u64>,
    /// MPS: the working set Metal recommends.
    pub recommended_max_bytes: Option<u64>,
    /// Operators PyTorch ran on the CPU instead of the device.
    pub fallback_ops: Vec<String>,
    /// The out-of-memory error the program ended on.
    pub oom: Option<String>,
    /// The observer could not hook in, or stopped at a fault of its own (where, and why).
    pub probe_error: Option<String>,
    /// DataLoader waits past the stall threshold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<LoaderStall>,
    /// Headroom ran the program's forward passes under autocast with this dtype (`bf16`,
    /// `f16`), or with the same hooks and no autocast (`off`): a sweep over `amp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amp_forced: Option<String>,
    /// Headroom released memory at every epoch end with this policy (`gc`, `empty-cache`,
    /// `both`; `none`: asked for no release): `run --release`, or a sweep over `release`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_forced: Option<String>,
    /// `run --profile-window N`: the operators over N iterations after the warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub profile: Option<ProfileWindow>,
    /// `headroom numerics`: the model against a CPU copy in f32, layer by layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub numerics: Option<crate::numerics::NumericsReport>,
}

impl Observed {
    /// The loop's shape in words, for every text that reports a run: "training iterations: 2
    /// optimizers stepped and 3 backward calls each", "inference iterations (no backward)", or
    /// that none was seen — never a silent zero.
    pub fn loop_shape(&self) -> String {
        if let Some(e) = &self.probe_error {
            let seen = if self.inference {
                "inference iterations"
            } else {
                "training iterations"
            };
            return format!(
                "{} {seen} seen before Headroom's observer stopped at a fault of its own ({e}); \
                 the program ran on, unobserved from there",
                self.steps
            );
        }
        if self.steps == 0 {
            return "no training iteration seen: this loop drew no DataLoader batch and called no \
                    module, backward or optimizer step that Headroom could see"
                .to_owned();
        }
        if self.inference {
            return format!("{} inference iterations (no backward)", self.steps);
        }
        let mut parts = Vec::new();
        match self.optimizer_steps {
            Some(0) => parts.push("no optimizer (weights updated by hand)".to_owned()),
            Some(n) if n > 1 => parts.push(format!("{n} optimizer steps each")),
            _ => {}
        }
        if let Some(n) = self.backward_calls.filter(|n| *n > 1) {
            parts.push(format!("{n} backward calls each"));
        }
        if let Some(n) = self.accumulation.filter(|n| *n > 1) {
            parts.push(format!("{n} batches accumulated each"));
        }
        if self.skipped_steps > 0 {
            parts.push(format!(
                "{} step(s) skipped by the GradScaler",
                self.skipped_steps
            ));
        }
        let head = format!("{} training iterations", self.steps);
        if parts.is_empty() {
            head
        } else {
            format!("{head}: {}", parts.join(", "))
        }
    }
}

/// One iteration of the main process, as [`Observation`] keeps it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTime {
    /// Seconds since the run started.
    pub at: f64,
    /// Since the previous iteration (none for the first).
    pub ms: Option<f64>,
    pub data_ms: f64,
    pub copy_ms: f64,
    pub backward: u32,
    /// Its batch (none where no tensor was seen) and its different batches (accumulation).
    pub batch: Option<u64>,
    pub micro: u32,
    /// Time in evaluation passes before it, since the previous iteration.
    pub eval_ms: f64,
}

/// An epoch the observer reported, with the memory at its end.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedEpoch {
    pub n: u32,
    pub at: f64,
    /// When its pass began, seconds since the run started.
    pub start: Option<f64>,
    pub steps: u64,
    pub mem: Option<DeviceMemory>,
    /// The allocator's cache before the epoch's release (a release policy on a device).
    pub cache_before: Option<u64>,
}

/// The running sum of a run's events.
#[derive(Debug, Default)]
pub struct Observation {
    pub observed: Observed,
    /// Iterations of the main process.
    pub steps: Vec<StepTime>,
    pub main_pid: Option<u32>,
    /// The first process that imported torch: the trainer until one steps (its DataLoader
    /// workers are forked after it).
    pub first_pid: Option<u32>,
    pids: BTreeMap<u32, u64>,
    /// How many iterations had each batch, each count of different batches, of optimizer
    /// steps and of backward calls.
    batches: BTreeMap<u64, u64>,
    micro: BTreeMap<u32, u64>,
    opt: BTreeMap<u32, u64>,
    backward: BTreeMap<u32, u64>,
    /// Copy time and step time of the main process's timed steps, ms.
    copy_ms: f64,
    timed_ms: f64,
    /// How many iterations had each count of host syncs, and the syncs' ms in timed ones.
    syncs: BTreeMap<u32, u64>,
    sync_ms: f64,
}

impl Observation {
    /// Takes one event; `started` is the run's start in seconds since the Unix epoch. Returns
    /// the epoch it ended, if it was the main process's epoch.
    pub fn take(&mut self, ev: Event, started: f64) -> Option<ObservedEpoch> {
        match ev {
            Event::Hello {
                pid,
                torch,
                mps_built,
                mps_available,
                start_method,
                ..
            } => {
                let o = &mut self.observed;
                self.first_pid.get_or_insert(pid);
                self.pids.entry(pid).or_insert(0);
                o.processes = u32::try_from(self.pids.len()).unwrap_or(u32::MAX);
                if o.torch_version.is_none() {
                    o.torch_version = Some(torch);
                    o.mps_built = Some(mps_built);
                    o.mps_available = Some(mps_available);
                    o.start_method = start_method;
                }
            }
            Event::Begin { pid, t } => {
                if self.main_pid.is_none_or(|m| m == pid) && self.observed.began_s.is_none() {
                    self.observed.began_s = Some((t - started).max(0.0));
                }
            }
            Event::Step {
                pid,
                t,
                ms,
                data_ms,
                copy_ms,
                backward,
                batch,
                mem,
                kind,
                micro,
                opt,
                skipped,
                syncs,
                sync_ms,
                eval_ms,
                ..
            } => {
                *self.pids.entry(pid).or_insert(0) += 1;
                self.observed.processes = u32::try_from(self.pids.len()).unwrap_or(u32::MAX);
                self.observed.stepping_processes =
                    u32::try_from(self.pids.values().filter(|n| **n > 0).count()).unwrap_or(0);
                // The main process is the first to train (before any trains, the first to
                // iterate at all): a process that only ran forward passes gives way to one that
                // trains.
                let main = match self.main_pid {
                    Some(m)
                        if m != pid && kind == IterationKind::Train && self.observed.inference =>
                    {
                        self.reset_iterations();
                        self.main_pid = Some(pid);
                        pid
                    }
                    Some(m) => m,
                    None => *self.main_pid.insert(pid),
                };
                if pid != main {
                    return None;
                }
                let inferring = self.observed.inference || self.steps.is_empty();
                match (kind, inferring) {
                    // Inference once the loop trained: its validation, not its iterations.
                    (IterationKind::Infer, false) => return None,
                    (IterationKind::Infer, true) => self.observed.inference = true,
                    // The first training iteration makes the inference ones before it void (a
                    // framework's sanity check of its validation loop, a pass over the data).
                    (IterationKind::Train, _) => {
                        if self.observed.inference {
                            self.reset_iterations();
                        }
                    }
                }
                self.take_iteration(t - started, ms, data_ms, copy_ms, backward, batch, mem);
                if let Some(last) = self.steps.last_mut() {
                    last.eval_ms = eval_ms;
                }
                *self.syncs.entry(syncs).or_insert(0) += 1;
                if ms.is_some() {
                    self.sync_ms += sync_ms;
                }
                let o = &mut self.observed;
                o.syncs_per_step = median_count(&self.syncs).filter(|n| *n > 0);
                o.sync_share = (self.timed_ms > 0.0 && self.sync_ms > 0.0)
                    .then(|| (self.sync_ms / self.timed_ms).min(1.0));
                let micro = micro.unwrap_or(backward).max(1);
                if let Some(last) = self.steps.last_mut() {
                    last.micro = micro;
                }
                *self.micro.entry(micro).or_insert(0) += 1;
                let o = &mut self.observed;
                o.accumulation = median_count(&self.micro);
                if kind == IterationKind::Train {
                    *self.opt.entry(opt).or_insert(0) += 1;
                    *self.backward.entry(backward).or_insert(0) += 1;
                    o.optimizer_steps = median_count(&self.opt);
                    o.backward_calls = median_count(&self.backward);
                    o.skipped_steps += u64::from(skipped);
                }
            }
            Event::Epoch {
                pid,
                t,
                n,
                steps,
                start,
                mem,
                cache_before,
            } => {
                if self.main_pid == Some(pid) && !self.observed.inference {
                    return Some(ObservedEpoch {
                        n,
                        at: t - started,
                        start: start.map(|s| (s - started).max(0.0)),
                        steps,
                        mem,
                        cache_before,
                    });
                }
            }
            Event::Loader { settings, .. } => {
                let o = &mut self.observed;
                if o.loader.is_none() {
                    o.loader = Some(settings);
                }
            }
            other => note(&mut self.observed, other),
        }
        None
    }

    /// One iteration of the main process.
    #[allow(clippy::too_many_arguments)]
    fn take_iteration(
        &mut self,
        at: f64,
        ms: Option<f64>,
        data_ms: f64,
        copy_ms: f64,
        backward: u32,
        batch: Option<u64>,
        mem: Option<DeviceMemory>,
    ) {
        let o = &mut self.observed;
        o.steps += 1;
        if let Some(b) = batch.filter(|b| *b > 0) {
            *self.batches.entry(b).or_insert(0) += 1;
            o.batch = mode(&self.batches);
        }
        self.steps.push(StepTime {
            at,
            ms,
            data_ms,
            copy_ms,
            backward,
            batch,
            micro: 1,
            eval_ms: 0.0,
        });
        if let Some(ms) = ms {
            self.copy_ms += copy_ms.min(ms);
            self.timed_ms += ms;
            o.copy_share = (self.timed_ms > 0.0).then(|| self.copy_ms / self.timed_ms);
        }
        if let Some(m) = mem {
            o.device = Some(m.device.clone());
            if m.recommended_max.is_some() {
                o.recommended_max_bytes = m.recommended_max;
            }
            if let Some(held) = m.held() {
                o.peak_device_held_bytes =
                    Some(o.peak_device_held_bytes.map_or(held, |p| p.max(held)));
            }
            if m.total.is_some() {
                o.device_total_bytes = m.total;
                o.device_free_bytes = m.free;
            }
            if let Some(high) = m.high() {
                if o.peak_device_bytes.is_none_or(|p| high > p) {
                    o.peak_device_bytes = Some(high);
                    o.peak_device_cached_bytes = m.cached();
                }
            }
        }
    }

    /// Forgets the inference iterations seen before the loop trained.
    fn reset_iterations(&mut self) {
        let o = &mut self.observed;
        o.inference = false;
        o.steps = 0;
        o.batch = None;
        o.accumulation = None;
        o.copy_share = None;
        self.steps.clear();
        self.batches.clear();
        self.micro.clear();
        self.copy_ms = 0.0;
        self.timed_ms = 0.0;
        o.syncs_per_step = None;
        o.sync_share = None;
        self.syncs.clear();
        self.sync_ms = 0.0;
    }

    /// Samples an iteration trained: its batch (or `batch`, the one Headroom put into the
    /// command) times its different batches.
    fn samples_of(&self, s: &StepTime, batch: Option<u64>) -> Option<u64> {
        Some(batch.or(s.batch).or(self.observed.batch)? * u64::from(s.micro.max(1)))
    }

    /// Samples per second over the main process's iterations: the samples trained after the
    /// first iteration over the time from its end to the last one's (so a run that waits on
    /// its data is measured as it runs, not by its fastest steps), less the time its
    /// evaluation passes took in between (a validation each epoch trains nothing). `batch`:
    /// the batch Headroom put into the command, which then is the batch; else each
    /// iteration's own.
    pub fn samples_per_s(&self, batch: Option<u64>) -> Option<f64> {
        let (first, last) = (self.steps.first()?, self.steps.last()?);
        let evaluated: f64 = self.steps[1..].iter().map(|s| s.eval_ms).sum::<f64>() / 1e3;
        let span = last.at - first.at - evaluated;
        if self.steps.len() < 2 || span <= 0.0 {
            return None;
        }
        let mut samples = 0u64;
        for s in &self.steps[1..] {
            samples += self.samples_of(s, batch)?;
        }
        #[allow(clippy::cast_precision_loss)]
        Some(samples as f64 / span)
    }

    /// Seconds of evaluation between `from` and `to` (seconds since the run started), from
    /// what each iteration's `eval_ms` says ran since the one before it — less the part that
    /// could only have run before `from` (a validation after the previous epoch is sent with
    /// the next epoch's first iteration, and ran before that epoch began).
    pub fn evaluated_between(&self, from: f64, to: f64) -> f64 {
        // Iterations are in the order they ended: the window's are found, not all walked.
        let first = self.steps.partition_point(|s| s.at <= from);
        let mut previous = first.checked_sub(1).map(|i| self.steps[i].at);
        let mut total = 0.0;
        for s in self.steps[first..].iter().take_while(|s| s.at <= to) {
            if s.eval_ms > 0.0 {
                let before = previous.map_or(0.0, |p| (from - p).max(0.0));
                total += (s.eval_ms / 1e3 - before).max(0.0);
            }
            previous = Some(s.at);
        }
        total
    }

    /// Samples trained so far by the main process.
    pub fn samples_so_far(&self) -> f64 {
        let n: u64 = self
            .steps
            .iter()
            .filter_map(|s| self.samples_of(s, None))
            .sum();
        #[allow(clippy::cast_precision_loss)]
        let n = n as f64;
        n
    }

    /// Step times after the first, ms.
    pub fn step_ms(&self) -> Vec<f64> {
        self.steps.iter().filter_map(|s| s.ms).collect()
    }

    /// The DataLoader waits of the steps after the first, ms, and their share of those steps'
    /// time.
    pub fn data(&self) -> (Vec<f64>, Option<f64>) {
        let timed: Vec<(f64, f64)> = self
            .steps
            .iter()
            .filter_map(|s| Some((s.data_ms, s.ms?)))
            .collect();
        let total: f64 = timed.iter().map(|t| t.1).sum();
        let data: f64 = timed.iter().map(|t| t.0.min(t.1)).sum();
        (
            timed.iter().map(|t| t.0).collect(),
            (total > 0.0).then(|| data / total),
        )
    }
}

/// What the other events add to the observation.
fn note(o: &mut Observed, ev: Event) {
    match ev {
        Event::Flag { name, value, .. } => match name.as_str() {
            "autocast" => {
                if let Some(v) = value.as_str() {
                    if !o.autocast.iter().any(|a| a == v) {
                        o.autocast.push(v.to_owned());
                    }
                }
            }
            "compile" => o.compiled = true,
            "checkpoint" => o.checkpointing = true,
            "seed" => o.seed = o.seed.or(value.as_u64()),
            "amp_forced" => o.amp_forced = value.as_str().map(str::to_owned),
            "release_forced" => o.release_forced = value.as_str().map(str::to_owned),
            "sync_site" => o.sync_site = value.as_str().map(str::to_owned),
            "numerics" => {
                let mut n: crate::numerics::NumericsReport = serde_json::from_value(value)
                    .unwrap_or_else(|e| crate::numerics::NumericsReport {
                        error: Some(format!("the observer's comparison did not parse: {e}")),
                        ..crate::numerics::NumericsReport::default()
                    });
                // The fallback warnings came before the comparison's event, the pass's own
                // included (PyTorch warns of each operator once per process).
                if n.fallback_ops.is_empty() {
                    n.fallback_ops.clone_from(&o.fallback_ops);
                }
                o.numerics = Some(n);
            }
            "profile" => {
                o.profile = Some(
                    serde_json::from_value(value).unwrap_or_else(|e| ProfileWindow {
                        error: Some(format!("the observer's summary did not parse: {e}")),
                        ..ProfileWindow::default()
                    }),
                );
            }
            _ => {}
        },
        Event::Warning { message, .. } => {
            if let Some(op) = crate::failure::fallback_op(&message) {
                if !o.fallback_ops.contains(&op) {
                    o.fallback_ops.push(op);
                }
            }
        }
        Event::Oom { message, .. } => o.oom = Some(message),
        Event::End { checkpoints, .. } => o.checkpointing |= checkpoints > 0,
        Event::ProbeError { message, .. } => o.probe_error = Some(message),
        Event::Stall {
            waited_s,
            workers,
            alive,
            step,
            ..
        } => o.stalls.push(LoaderStall {
            after_step: step,
            waited_s,
            workers,
            alive,
            ended: false,
        }),
        Event::StallEnd { waited_s, .. } => {
            if let Some(s) = o.stalls.iter_mut().rev().find(|s| !s.ended) {
                s.waited_s = s.waited_s.max(waited_s);
                s.ended = true;
            }
        }
        _ => {}
    }
}

/// The value with the most counts (the larger of two as common).
fn mode(counts: &BTreeMap<u64, u64>) -> Option<u64> {
    counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(b.0)))
        .map(|(v, _)| *v)
}

/// The median of values given as counts per value.
fn median_count(counts: &BTreeMap<u32, u64>) -> Option<u32> {
    let n: u64 = counts.values().sum();
    let mut seen = 0;
    for (value, count) in counts {
        seen += count;
        if seen > n / 2 {
            return Some(*value);
        }
    }
    None
}
