//! The user's training observed from inside, with no code change: `headroom run` puts a
//! `sitecustomize` of Headroom's (`instrument/sitecustomize.py`) on the child's import path and
//! listens on a Unix socket named in `HEADROOM_EVENTS`. Once the program imports torch, each of
//! its Python processes (the trainer, DataLoader workers, `torchrun` ranks) reports JSON lines:
//! optimizer steps, backward calls, DataLoader waits and epochs, device memory, autocast, compile,
//! checkpointing, the seed, CPU fallbacks and an out-of-memory error. This module is the
//! listener ([`Channel`]), the events ([`Event`]) and their sum ([`Observation`] → [`Observed`]).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::CoreError;

/// The observer, written next to the socket and put first on `PYTHONPATH`.
pub const SITECUSTOMIZE: &str = include_str!("instrument/sitecustomize.py");

/// The environment variable that names the socket (the observer does nothing without it).
pub const EVENTS_ENV: &str = "HEADROOM_EVENTS";

/// The environment variable that names a start's gate: the observer stops the process before
/// its first batch until that file exists (see the observer's head), and says where it stands
/// beside it (`.armed` once torch is imported, `.waiting` at the gate).
pub const GATE_ENV: &str = "HEADROOM_GATE";

/// The environment variable that sets the DataLoader stall threshold in seconds (the
/// observer reports a longer wait for a batch; 0 turns it off).
pub const STALL_ENV: &str = "HEADROOM_STALL_S";

/// The stall threshold when the user gives none (`run --stall-after`): long enough for a first
/// batch from a slow disk, short enough that a hang is seen within minutes.
pub const DEFAULT_STALL_S: u32 = 120;

/// The environment variable that runs the program's forward passes under autocast (`bf16`,
/// `f16`) or with the same hooks and none (`off`): `run --sweep amp=off,bf16`.
pub const AMP_ENV: &str = "HEADROOM_AMP";

/// The values `amp` takes, in a sweep or `run --amp`.
pub const AMP_VALUES: [&str; 3] = ["off", "bf16", "f16"];

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

/// A line longer than this ends the connection: the observer never writes one.
const MAX_LINE: u64 = 1 << 20;

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
    /// The observer failed to hook in (the program runs on, unobserved).
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
    /// The observer could not hook in (why).
    pub probe_error: Option<String>,
    /// DataLoader waits past the stall threshold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<LoaderStall>,
    /// Headroom ran the program's forward passes under autocast with this dtype (`bf16`,
    /// `f16`), or with the same hooks and no autocast (`off`): a sweep over `amp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amp_forced: Option<String>,
}

impl Observed {
    /// The loop's shape in words, for every text that reports a run: "training iterations: 2
    /// optimizers stepped and 3 backward calls each", "inference iterations (no backward)", or
    /// that none was seen — never a silent zero.
    pub fn loop_shape(&self) -> String {
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
}

/// The running sum of a run's events.
#[derive(Debug, Default)]
pub struct Observation {
    pub observed: Observed,
    /// Iterations of the main process.
    pub steps: Vec<StepTime>,
    pub main_pid: Option<u32>,
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
            } => {
                if self.main_pid == Some(pid) && !self.observed.inference {
                    return Some(ObservedEpoch {
                        n,
                        at: t - started,
                        start: start.map(|s| (s - started).max(0.0)),
                        steps,
                        mem,
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
    }

    /// Samples an iteration trained: its batch (or `batch`, the one Headroom put into the
    /// command) times its different batches.
    fn samples_of(&self, s: &StepTime, batch: Option<u64>) -> Option<u64> {
        Some(batch.or(s.batch).or(self.observed.batch)? * u64::from(s.micro.max(1)))
    }

    /// Samples per second over the main process's iterations: the samples trained after the
    /// first iteration over the time from its end to the last one's (so a run that waits on
    /// its data is measured as it runs, not by its fastest steps). `batch`: the batch Headroom
    /// put into the command, which then is the batch; else each iteration's own.
    pub fn samples_per_s(&self, batch: Option<u64>) -> Option<f64> {
        let (first, last) = (self.steps.first()?, self.steps.last()?);
        let span = last.at - first.at;
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
            _ => {}
        },
        Event::Warning { message, .. } => {
            if let Some(op) = crate::monitor::fallback_op(&message) {
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

/// The listening side: a folder holding the observer and the socket, removed on drop.
#[derive(Debug)]
pub struct Channel {
    dir: PathBuf,
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    acceptor: Option<std::thread::JoinHandle<Vec<std::thread::JoinHandle<()>>>>,
}

impl Channel {
    /// Writes the observer into a fresh folder under the system's temporary folder and starts
    /// listening; every event is sent on `tx` (wrapped by `wrap`).
    pub fn open<T: Send + 'static>(
        tx: mpsc::SyncSender<T>,
        wrap: fn(Event) -> T,
    ) -> Result<Self, CoreError> {
        let dir = fresh_dir()?;
        let io = |what: &'static str, e: std::io::Error| CoreError::Io {
            what,
            path: dir.display().to_string(),
            source: e,
        };
        std::fs::write(dir.join("sitecustomize.py"), SITECUSTOMIZE).map_err(|e| {
            io(
                "cannot write Headroom's observer (set TMPDIR to a writable folder) in",
                e,
            )
        })?;
        let socket = dir.join("events.sock");
        let listener = UnixListener::bind(&socket)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| {
                io(
                    "cannot listen for the observer's events (set TMPDIR to a writable folder) in",
                    e,
                )
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || accept(&listener, &stop, &tx, wrap))
        };
        Ok(Self {
            dir,
            socket,
            stop,
            acceptor: Some(acceptor),
        })
    }

    /// The environment a child needs to be observed: the socket, and the observer first on
    /// `PYTHONPATH` (before what the environment already has there).
    pub fn env(&self) -> Vec<(String, std::ffi::OsString)> {
        let mut path = self.dir.clone().into_os_string();
        if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(old);
        }
        vec![
            (EVENTS_ENV.to_owned(), self.socket.clone().into_os_string()),
            ("PYTHONPATH".to_owned(), path),
        ]
    }

    /// The gate file of a process started at a gate ([`GATE_ENV`]), in this channel's folder (a
    /// process waiting there ends itself when the folder is removed with the channel).
    pub fn gate_path(&self) -> PathBuf {
        self.dir.join("gate")
    }

    /// How far the process started at this channel's gate has come.
    pub fn gate_state(&self) -> GateState {
        let gate = self.gate_path();
        let beside = |ext: &str| {
            let mut p = gate.clone().into_os_string();
            p.push(ext);
            PathBuf::from(p).exists()
        };
        if beside(".waiting") {
            GateState::Waiting
        } else if beside(".armed") {
            GateState::Armed
        } else {
            GateState::Starting
        }
    }

    /// Lets the process past its gate.
    pub fn open_gate(&self) -> Result<(), CoreError> {
        let gate = self.gate_path();
        std::fs::write(&gate, b"").map_err(|e| CoreError::Io {
            what: "cannot open the gate of a run started ahead in",
            path: self.dir.display().to_string(),
            source: e,
        })
    }

    /// Stops accepting, and waits up to `grace` for the connections still open to end (a
    /// process that outlives the command would otherwise hold the run open).
    pub fn close(mut self, grace: Duration) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.acceptor.take() {
            let readers = a.join().unwrap_or_default();
            let until = Instant::now() + grace;
            while readers.iter().any(|r| !r.is_finished()) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes the `headroom-run-PID-N` folders in `base` whose headroom process is gone (one
/// killed with SIGKILL cannot remove its own).
/// Where a command started at a gate (`jobs::watch::launch` with `gated`) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateState {
    /// Not yet observed from inside (the interpreter starting, or a program without torch).
    Starting,
    /// torch is imported and the observer hooked in: the gate comes before its first batch.
    Armed,
    /// Waiting at the gate: started up, no batch-sized work done.
    Waiting,
    /// The command has ended (before its gate: a crash at import, a bad argument).
    Exited,
}

/// Removes the `headroom-run-PID-N` folders in `base` whose headroom process is gone (one
/// killed with SIGKILL cannot remove its own).
fn remove_stale(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("headroom-run-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid.filter(|p| *p != std::process::id()) {
            if !crate::child::process_alive(pid) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

fn fresh_dir() -> Result<PathBuf, CoreError> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = std::env::temp_dir();
    remove_stale(&base);
    for _ in 0..100 {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = base.join(format!("headroom-run-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(CoreError::Io {
                    what: "cannot make a folder (set TMPDIR to a writable folder) in",
                    path: base.display().to_string(),
                    source: e,
                })
            }
        }
    }
    Err(CoreError::InvalidInput(format!(
        "cannot make a fresh folder in {}; remove old headroom-run-* folders there",
        base.display()
    )))
}

fn accept<T: Send + 'static>(
    listener: &UnixListener,
    stop: &AtomicBool,
    tx: &mpsc::SyncSender<T>,
    wrap: fn(Event) -> T,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut readers = Vec::new();
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                let _ = conn.set_nonblocking(false);
                let tx = tx.clone();
                readers.push(std::thread::spawn(move || read_events(conn, &tx, wrap)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::SeqCst) {
                    return readers;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => return readers,
        }
    }
}

fn read_events<T>(conn: impl Read, tx: &mpsc::SyncSender<T>, wrap: fn(Event) -> T) {
    let mut r = BufReader::new(conn);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.by_ref().take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 >= MAX_LINE => return,
            Ok(_) => {
                if let Some(ev) = std::str::from_utf8(&line).ok().and_then(Event::parse) {
                    if tx.send(wrap(ev)).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(pid: u32, t: f64, ms: Option<f64>, data_ms: f64, backward: u32) -> Event {
        Event::Step {
            pid,
            t,
            n: 0,
            ms,
            data_ms,
            copy_ms: data_ms / 10.0,
            backward,
            batch: Some(64),
            mem: None,
            kind: IterationKind::Train,
            micro: None,
            opt: 1,
            skipped: 0,
        }
    }

    /// Issue 38: a process that only ran forward passes (a DataLoader worker whose transforms
    /// are modules, on an older observer) gives way to the process that trains.
    #[test]
    fn the_process_that_trains_is_the_main_one() {
        let mut o = Observation::default();
        let infer = |pid, t| {
            let Event::Step {
                n,
                ms,
                data_ms,
                copy_ms,
                batch,
                mem,
                micro,
                skipped,
                ..
            } = step(pid, t, None, 0.0, 0)
            else {
                unreachable!("a step")
            };
            Event::Step {
                pid,
                t,
                n,
                ms,
                data_ms,
                copy_ms,
                backward: 0,
                batch,
                mem,
                kind: IterationKind::Infer,
                micro,
                opt: 0,
                skipped,
            }
        };
        o.take(infer(8, 100.0), 99.0);
        o.take(infer(8, 100.1), 99.0);
        assert_eq!((o.main_pid, o.observed.inference), (Some(8), true));
        o.take(step(7, 100.5, None, 0.0, 1), 99.0);
        o.take(step(7, 101.0, Some(500.0), 0.0, 1), 99.0);
        o.take(infer(8, 101.1), 99.0);
        assert_eq!(o.main_pid, Some(7));
        assert_eq!(o.observed.steps, 2);
        assert!(!o.observed.inference);
    }

    #[test]
    fn events_parse_and_unknown_ones_are_ignored() {
        let hello = r#"{"ev":"hello","torch":"2.11.0","mps_built":true,"mps_available":false,"start_method":null,"argv":["t.py"],"pid":7,"t":10.5}"#;
        assert!(matches!(
            Event::parse(hello),
            Some(Event::Hello { pid: 7, .. })
        ));
        let step = r#"{"ev":"step","n":2,"data_ms":5.4,"backward":2,"batch":64,"mem":{"device":"cuda:0","allocated":100,"reserved":300,"peak":250},"ms":27.8,"pid":7,"t":11.0}"#;
        let Some(Event::Step { mem: Some(m), .. }) = Event::parse(step) else {
            panic!("a step")
        };
        assert_eq!((m.high(), m.cached()), (Some(250), Some(200)));
        assert_eq!(
            Event::parse(r#"{"ev":"later","pid":1,"t":1}"#),
            Some(Event::Unknown)
        );
        assert_eq!(Event::parse("not json"), None);
    }

    #[test]
    fn the_first_process_to_step_is_the_main_one_and_accumulation_is_the_median() {
        let mut o = Observation::default();
        o.take(step(7, 100.0, None, 3.0, 4), 99.0);
        o.take(step(7, 100.5, Some(500.0), 400.0, 4), 99.0);
        o.take(step(8, 100.6, None, 0.0, 1), 99.0);
        o.take(step(7, 101.0, Some(500.0), 100.0, 4), 99.0);
        assert_eq!(o.observed.steps, 3);
        assert_eq!(o.observed.stepping_processes, 2);
        assert_eq!(o.observed.accumulation, Some(4));
        // Two steps after the first, 4 batches of 64 each, over one second.
        assert!((o.samples_per_s(None).unwrap() - 512.0).abs() < 1e-9);
        let (data, share) = o.data();
        assert_eq!(data, vec![400.0, 100.0]);
        assert!((share.unwrap() - 0.5).abs() < 1e-9);
        // Copies (a tenth of the data waits here) over the timed steps' time.
        assert!((o.observed.copy_share.unwrap() - 0.05).abs() < 1e-9);
    }
}
