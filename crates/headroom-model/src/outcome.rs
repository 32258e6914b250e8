//! What a wrapped or watched run produced ([`WatchOutcome`]): the figures a result needs and
//! the memory story, as `headroom run` and `headroom watch` report it and the ledger keeps it —
//! plain data and what follows from it (a sweep point, the loading advice), no process or file.

use serde::{Deserialize, Serialize};

use crate::epochs::{EpochSample, EpochVerdict};

/// The share of step time above which a run is called data-bound.
pub const DATA_BOUND_SHARE: f64 = 0.5;

/// An operator's total GPU time in a run, from the MPS profiler log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpTime {
    pub name: String,
    pub gpu_ms: f64,
    pub calls: u32,
}

/// `OPERATION_INFO | INCLUDE_GPU_TIME` of PyTorch's `MPSProfiler::LogOptions`.
pub const MPS_PROFILE_LOG_OPTIONS: u32 = 1 | (1 << 7);

/// What a watched run produced: the five fields a result needs and the memory story.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchOutcome {
    pub run_id: i64,
    pub command: String,
    /// The child's exit code (`None` when killed by a signal, or for `watch`).
    pub exit_code: Option<i32>,
    pub seconds: f64,
    pub torch_version: Option<String>,
    pub git_commit: Option<String>,
    pub batch: Option<u32>,
    pub peak_tree_bytes: u64,
    /// Any operator fell back from MPS to the CPU.
    pub fallback: bool,
    pub fallback_ops: Vec<String>,
    pub readings: usize,
    pub epochs: Vec<EpochSample>,
    pub verdict: EpochVerdict,
    /// Mean GPU utilisation (0–1) over the run, where it can be sampled.
    #[serde(default)]
    pub gpu_busy: Option<f64>,
    /// GPU time per operator from the MPS profiler log, largest first (at most 20).
    #[serde(default)]
    pub op_times: Vec<OpTime>,
    /// The command's output said it ran out of memory (CUDA, MPS or the CPU allocator).
    #[serde(default)]
    pub oom: bool,
    /// Headroom stopped the command at its time or step bound.
    #[serde(default)]
    pub stopped_at_limit: bool,
    /// Step markers seen (`headroom-step` lines).
    #[serde(default)]
    pub steps: u32,
    /// Median and 95th-percentile time between step markers, ms.
    #[serde(default)]
    pub step_ms_p50: Option<f64>,
    #[serde(default)]
    pub step_ms_p95: Option<f64>,
    /// The spread of those step times (coefficient of variation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_cv: Option<f64>,
    /// Samples over the time from the first step to the last (the batch times the steps, or
    /// the backward calls where the observer saw them).
    #[serde(default)]
    pub samples_per_s: Option<f64>,
    /// With `headroom-data` markers too: median data and compute part of a step, ms, and the
    /// data part's share of the summed step time (the first step left out).
    #[serde(default)]
    pub data_ms_p50: Option<f64>,
    #[serde(default)]
    pub compute_ms_p50: Option<f64>,
    #[serde(default)]
    pub data_share: Option<f64>,
    /// "data-bound: …" or "compute-bound: …" with the figures ([`Self::pipeline_verdict`]).
    #[serde(default)]
    pub pipeline: Option<String>,
    /// The memory budget it ran under, and whether the supervisor stopped it for going over.
    #[serde(default)]
    pub budget_bytes: Option<u64>,
    #[serde(default)]
    pub over_budget: bool,
    /// The signal that ended the command (SIGKILL from the OOM killer, SIGSEGV), when one did.
    #[serde(default)]
    pub signal: Option<i32>,
    /// The user stopped Headroom (Ctrl-C, SIGTERM) and the command with it.
    #[serde(default)]
    pub interrupted: bool,
    /// What Headroom's observer saw inside the program (none: not a torch program, or
    /// `--no-instrument`).
    #[serde(default)]
    pub observed: Option<crate::observed::Observed>,
    /// Stopped once its step time settled; the step figures are those of the settled steps.
    #[serde(default)]
    pub settled: bool,
    /// Seconds from the start to its first step (interpreter, imports, model, data workers).
    #[serde(default)]
    pub first_step_s: Option<f64>,
    /// Started ahead of its turn (a sweep's next start, begun while another was measured): the
    /// seconds from its start until it was let past its gate. Its start-up cost no wall time of
    /// its own up to there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_s: Option<f64>,
    /// The metrics the command reported (`headroom-metric` lines, `--metric` regexes): the last
    /// value of each.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// What else used the cores, the memory and the accelerator while it ran, from the end of
    /// its warm-up steps (from its start when it showed none), as a sweep's point records it:
    /// a figure timed beside other work is less sure, and a pair judged on it says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::pointload::PointLoad>,
    /// The most one of its child processes (DataLoader workers, mostly) held in any reading:
    /// its own pages (PSS where the OS gives it), what one more worker would cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_bytes: Option<u64>,
    /// The machine's state while it was timed (from the end of its warm-up): thermal state,
    /// power source, power and energy where the platform gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<crate::conditions::TimedConditions>,
    /// Each epoch's conditions, in the order of `epochs` (empty where none were read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub epoch_conditions: Vec<crate::conditions::TimedConditions>,
}

impl WatchOutcome {
    /// What may have skewed its figures: the run's conditions, then each epoch's that the
    /// run's did not already name (an epoch that throttled in a run that mostly did not).
    pub fn condition_warnings(&self) -> Vec<String> {
        let mut out = self
            .conditions
            .as_ref()
            .map(|c| c.warnings_for(&format!("run {}", self.run_id)))
            .unwrap_or_default();
        if out.is_empty() {
            for (e, c) in self.epochs.iter().zip(&self.epoch_conditions) {
                out.extend(c.warnings_for(&format!("epoch {}", e.epoch)));
            }
        }
        out
    }

    /// Joules per sample: the run's mean power while timed over its throughput.
    pub fn joules_per_sample(&self) -> Option<f64> {
        self.conditions
            .as_ref()?
            .joules_per_sample_at(self.samples_per_s?)
    }

    /// The data stage takes at least [`DATA_BOUND_SHARE`] of the step time.
    pub fn data_bound(&self) -> Option<bool> {
        self.data_share.map(|s| s >= DATA_BOUND_SHARE)
    }

    /// It ran to its end (exit 0, or stopped at its own step or time bound), not out of memory,
    /// over its budget or stopped by the user.
    pub fn finished(&self) -> bool {
        !self.over_budget
            && !self.oom
            && (self.exit_code == Some(0) || (self.stopped_at_limit && !self.interrupted))
    }

    /// This run as a sweep point at its batch (none when the batch is unknown): throughput from
    /// its steps, its process tree's peak, OOM or over budget as the built-in sweep records them.
    pub fn as_point(&self) -> Option<crate::protocol::Point> {
        use crate::protocol::{Point, PointStatus};
        let batch = self.batch?;
        let status = if self.over_budget {
            PointStatus::OverBudget
        } else if self.oom {
            PointStatus::Oom
        } else if self.finished() {
            PointStatus::Ok
        } else {
            PointStatus::Error
        };
        let mut p = Point::failed(batch, status, format!("run {}", self.run_id));
        p.samples_per_s = self.samples_per_s;
        p.step_ms_p50 = self.step_ms_p50;
        p.step_ms_p95 = self.step_ms_p95;
        p.step_cv = self.step_cv;
        p.data_ms = self.data_ms_p50;
        p.peak_process_bytes = Some(self.peak_tree_bytes);
        // On an accelerator its allocator's peak is what runs out; on the CPU, the processes'.
        let device = self
            .observed
            .as_ref()
            .filter(|o| o.device.as_deref().is_some_and(|d| d != "cpu"));
        p.peak_allocated_bytes = device.and_then(|o| o.peak_device_bytes);
        p.peak_reserved_bytes = device.and_then(|o| o.peak_device_held_bytes);
        p.peak_bytes = Some(p.peak_reserved_bytes.unwrap_or(self.peak_tree_bytes));
        p.first_step_s = self.first_step_s;
        p.timed_steps = self.steps.saturating_sub(1);
        p.gpu_busy = self.gpu_busy;
        if p.status == PointStatus::Ok {
            p.message = None;
        }
        Some(p)
    }

    /// What to change in the loading, from what the observer saw: more workers when few run,
    /// `pin_memory` only when host-to-device copies were measured to take a share of the step
    /// that matters ([`crate::observed::COPIES_MATTER`]).
    pub fn loading_advice(&self) -> String {
        let o = self.observed.as_ref();
        let loader = o.and_then(|o| o.loader.as_ref());
        let mut advice = Vec::new();
        match loader {
            Some(l) if l.num_workers == 0 => {
                advice.push(
                    "num_workers above 0: the loading runs in the training process now".to_owned(),
                );
            }
            Some(l) => advice.push(format!("more than num_workers={}", l.num_workers)),
            None => advice.push("num_workers".to_owned()),
        }
        advice.push("decoding and augmentation once, ahead of training".to_owned());
        if let Some(copy) = o.and_then(|o| o.copy_share) {
            if copy >= crate::observed::COPIES_MATTER && !loader.is_some_and(|l| l.pin_memory) {
                advice.push(format!(
                    "pin_memory=True with .to(device, non_blocking=True): host-to-device copies take {:.0} % of the step",
                    copy * 100.0
                ));
            }
        }
        advice.join("; ")
    }

    /// Data-bound or compute-bound, with the figures, when the script printed both markers.
    pub fn pipeline_verdict(&self) -> Option<String> {
        let (share, d, c) = (self.data_share?, self.data_ms_p50?, self.compute_ms_p50?);
        let figures = format!(
            "the data stage takes {:.0} % of step time (median {d:.1} ms data, {c:.1} ms compute; \
             data-bound from {:.0} %)",
            share * 100.0,
            DATA_BOUND_SHARE * 100.0
        );
        Some(if share >= DATA_BOUND_SHARE {
            format!(
                "data-bound: {figures} — speed up loading first ({}); a faster device will not help",
                self.loading_advice()
            )
        } else {
            format!("compute-bound: {figures} — the device's speed is what matters here")
        })
    }
}
