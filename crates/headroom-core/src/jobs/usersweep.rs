//! `batch=auto`: the sweep planner on the user's own training command. Each point is one start of
//! the command with `{batch}` filled in, observed from inside and stopped as soon as its step time
//! settles; the planner spends few of them ([`crate::planner::Planner::costly`]): the memory line
//! from two small points, one verified jump to the largest batch it predicts under the budget, then
//! the knee. The sweep is one `sweep` run in the ledger (the workload is the command) with its
//! points, summary and chart, exactly as `headroom sweep` records a built-in workload; each start is
//! also a `run` of its own, with its memory readings. With `{device}` over a CPU baseline and an
//! accelerator, the baseline then runs once at the recommended batch: the speed-up of the user's
//! own script, which the decision uses.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sweep::hard_limit;
use super::sweep::{JobError, SweepOutcome, Update};
use super::watch::{drive, launch, GateState, Launched, WatchOptions, WatchOutcome, SETTLE_WARMUP};
use super::JobStatus;
use crate::budget::{accelerator_ceiling, format_bytes, BudgetSpec};
use crate::ledger::{Ledger, NewRun, RunKind, RunStatus};
use crate::planner::{Limit, Next, Planner};
use crate::protocol::{BatchPlan, Hello, Phase, Point, PointStatus, PROTOCOL_VERSION};
use crate::readings::EpochMatcher;
use crate::summary::{compare, summarize, Comparison};
use crate::CoreError;

pub use crate::ledger::COMPARISON_SAMPLE;

/// One value of `{device}`: a device name as the script takes it, and optionally the CPU
/// threads to give it (`cpu@2`: `OMP_NUM_THREADS=2`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceChoice {
    pub device: String,
    pub threads: Option<u32>,
}

impl DeviceChoice {
    /// Parses `cpu`, `mps`, `cuda:0`, `cpu@2`.
    pub fn parse(text: &str) -> Result<Self, CoreError> {
        let t = text.trim();
        let (device, threads) = match t.split_once('@') {
            Some((d, n)) => {
                let n: u32 = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    CoreError::InvalidInput(format!(
                        "--device-sweep {t:?}: after '@' comes a thread count of 1 or more (cpu@4)"
                    ))
                })?;
                (d.trim(), Some(n))
            }
            None => (t, None),
        };
        // A torch device type, with an index where it has several.
        let (kind, index) = device.split_once(':').unwrap_or((device, ""));
        let ok = matches!(kind, "cpu" | "mps" | "cuda" | "xpu" | "gpu")
            && (index.is_empty()
                || (kind != "cpu" && kind != "mps" && index.parse::<u32>().is_ok()));
        if !ok {
            return Err(CoreError::InvalidInput(format!(
                "--device-sweep {t:?} is not a device: give torch's names as the script takes them (cpu, mps, cuda, cuda:1), e.g. cpu,mps or cpu,cuda"
            )));
        }
        Ok(Self {
            device: device.to_owned(),
            threads,
        })
    }

    /// As written: `cpu`, `cpu@2`.
    pub fn label(&self) -> String {
        match self.threads {
            Some(n) => format!("{}@{n}", self.device),
            None => self.device.clone(),
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        self.threads
            .map(|n| vec![("OMP_NUM_THREADS".to_owned(), n.to_string())])
            .unwrap_or_default()
    }
}

/// Parses `cpu,mps`: the first is the baseline (normally the CPU), the last the accelerator swept
/// over the batch.
pub fn parse_devices(text: &str) -> Result<Vec<DeviceChoice>, CoreError> {
    let d: Vec<DeviceChoice> = text
        .split(',')
        .map(DeviceChoice::parse)
        .collect::<Result<_, _>>()?;
    if d.len() != 2 {
        return Err(CoreError::InvalidInput(format!(
            "--device-sweep {text:?}: give two devices, the baseline first (cpu,mps)"
        )));
    }
    Ok(d)
}

/// The CPU and this machine's accelerator, for a comparison nobody named: `cpu,mps` on macOS,
/// `cpu,cuda` where an NVIDIA driver is loaded; none where there is only the CPU.
pub fn default_devices() -> Option<Vec<DeviceChoice>> {
    let accel = if cfg!(target_os = "macos") {
        "mps"
    } else if std::path::Path::new("/proc/driver/nvidia/version").exists() {
        "cuda"
    } else {
        return None;
    };
    Some(
        ["cpu", accel]
            .map(|d| DeviceChoice {
                device: d.to_owned(),
                threads: None,
            })
            .to_vec(),
    )
}

/// The device to fill `{device}` with when nobody named one: this machine's accelerator, else
/// the CPU.
pub fn default_device() -> String {
    default_devices()
        .and_then(|d| d.last().map(|c| c.device.clone()))
        .unwrap_or_else(|| "cpu".into())
}

/// Whether a sweep begins its next start while the current one is measured (the sweep's `Ahead`: see `run_script_sweep`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prestart {
    /// Where the points run on a CUDA device: its memory is the device's own, and a start
    /// waiting at its gate holds only its context there. Not on the CPU or MPS, where the one
    /// waiting holds memory (and, on the CPU, cores) that the measured one uses.
    #[default]
    Auto,
    On,
    Off,
}

impl Prestart {
    pub fn parse(text: &str) -> Result<Self, CoreError> {
        match text.trim() {
            "auto" => Ok(Self::Auto),
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            other => Err(CoreError::InvalidInput(format!(
                "--prestart {other:?}: give auto, on or off"
            ))),
        }
    }
}

/// What to sweep.
#[derive(Debug, Clone)]
pub struct ScriptSweep {
    /// The command with `{batch}` (and `{device}` when `devices` is given).
    pub command: Vec<String>,
    /// The project it belongs to, kept with every run.
    pub project: Option<String>,
    pub start: u32,
    pub max: u32,
    pub budget: BudgetSpec,
    /// Empty, or the baseline and the accelerator for `{device}`.
    pub devices: Vec<DeviceChoice>,
    /// The longest one point may run (a script whose steps never settle).
    pub point_limit: Duration,
    /// Begin the next start while this one is measured.
    pub prestart: Prestart,
    /// How each start is watched (interval, thresholds, observer, folder, the interrupt flag
    /// that cancels the sweep).
    pub watch: WatchOptions,
}

/// Everything a script sweep produced: the sweep's document as `headroom sweep` gives it, the
/// runs it started, and the comparison with the baseline device.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptSweepOutcome {
    pub sweep: SweepOutcome,
    /// The command swept.
    pub command: String,
    /// The device the points ran on, as the observer saw it (`cuda:0`, `mps`, `cpu`).
    pub device: Option<String>,
    /// The `run` of each start, in order.
    pub runs: Vec<i64>,
    /// Each start, in order: where the time went.
    pub seconds: Vec<StartTime>,
    pub comparison: Option<Comparison>,
    /// The baseline's own sweep run (one point at the recommended batch).
    pub baseline_run_id: Option<i64>,
}

/// Where one start's seconds went.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartTime {
    pub batch: u32,
    /// From its start to its end.
    pub seconds: f64,
    /// From its start to its first step.
    pub first_step_s: Option<f64>,
    /// Begun ahead of its turn: how long it waited at its gate while another start was measured
    /// (its start-up up to there cost the sweep no wall time).
    pub waited_s: Option<f64>,
}

impl StartTime {
    fn of(batch: u32, w: &WatchOutcome) -> Self {
        Self {
            batch,
            seconds: w.seconds,
            first_step_s: w.first_step_s,
            waited_s: w.waited_s,
        }
    }
}

/// Checks the command has what the sweep fills in.
pub fn check(s: &ScriptSweep) -> Result<(), CoreError> {
    if !s.command.iter().any(|a| a.contains("{batch}")) {
        return Err(CoreError::InvalidInput(
            "batch=auto fills in {batch}: put it where the batch size goes, e.g. -- python train.py --batch-size {batch}".into(),
        ));
    }
    let has_device = s.command.iter().any(|a| a.contains("{device}"));
    if has_device && s.devices.is_empty() {
        return Err(CoreError::InvalidInput(
            "the command has {device}: say which with --device-sweep cpu,mps (the baseline first)"
                .into(),
        ));
    }
    if !has_device && !s.devices.is_empty() {
        return Err(CoreError::InvalidInput(
            "--device-sweep fills in {device}, and the command has none: put it where the device goes, e.g. --device {device}".into(),
        ));
    }
    if s.start == 0 || s.max < s.start {
        return Err(CoreError::InvalidInput(format!(
            "batch=auto from {} to {}: the first batch (--start-batch, {}) must be 1 or more and \
             at most the largest (--max-batch, {}); lower --start-batch or raise --max-batch",
            s.start, s.max, s.start, s.max
        )));
    }
    Ok(())
}

struct Budgets {
    /// What the planner holds points to (device memory on an accelerator, the processes' on
    /// the CPU).
    planner: u64,
    /// What the supervisor stops a start at (the processes' memory): the machine must not swap.
    host_kill: u64,
}

fn host_budgets(spec: BudgetSpec) -> Result<Budgets, CoreError> {
    let m = crate::sysmem::system_memory().ok_or_else(|| {
        CoreError::InvalidInput(
            "cannot read this machine's memory to set the budget; pass --budget with a size (e.g. 6GiB)".into(),
        )
    })?;
    let planner = spec.resolve(m.total, m.available);
    let default = BudgetSpec::Default.resolve(m.total, m.available);
    Ok(Budgets {
        planner,
        host_kill: hard_limit(planner).min(default.max(planner)),
    })
}

/// The device budget once the first point said what the device is: CUDA's from its size and
/// what was free (the same default and ceiling as a built-in sweep); others keep the host's.
fn device_budget(spec: BudgetSpec, out: &WatchOutcome) -> Option<u64> {
    let o = out.observed.as_ref()?;
    let total = o.device_total_bytes?;
    let free = o.device_free_bytes.unwrap_or(total);
    // What this process already held when it measured free memory is the sweep's own.
    let available = free
        .saturating_add(o.peak_device_held_bytes.unwrap_or(0))
        .min(total);
    Some(
        spec.resolve(total, available)
            .min(accelerator_ceiling(total)),
    )
}

/// Runs the sweep, recording it in `ledger`; `on` hears every update (as a built-in sweep's).
/// Interrupting (the watch options' flag) stops the running start and ends the sweep with the
/// points measured.
pub fn run_script_sweep(
    s: &ScriptSweep,
    ledger: &Ledger,
    on: &mut dyn FnMut(&Update),
) -> Result<ScriptSweepOutcome, CoreError> {
    check(s)?;
    let shown = s.command.join(" ");
    let accel = s.devices.last();
    let mut budgets = host_budgets(s.budget)?;
    let dir = s
        .watch
        .dir
        .clone()
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    let git = crate::gitinfo::git_state(&dir);
    let request = serde_json::json!({
        "script": true,
        "command": s.command,
        "project": s.project,
        "start": s.start,
        "max": s.max,
        "devices": s.devices.iter().map(DeviceChoice::label).collect::<Vec<_>>(),
    });
    let begin = |device: &str, budget: u64, request: &serde_json::Value| {
        ledger.begin_run(&NewRun {
            kind: RunKind::Sweep,
            host: super::hostname(),
            device: device.to_owned(),
            device_name: shown.chars().take(120).collect(),
            workload: shown.chars().take(200).collect(),
            dtype: None,
            mode: None,
            libtorch: "unknown".into(),
            git_commit: git.commit.clone(),
            git_dirty: git.dirty,
            budget_bytes: Some(budget),
            fallback: None,
            request_json: request.to_string(),
            owner_pid: Some(std::process::id()),
        })
    };
    // The device is learnt from the first start that is observed from inside.
    let label = accel.map_or_else(|| "unknown".to_owned(), DeviceChoice::label);
    let run_id = begin(&label, budgets.planner, &request)?;
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        headroom_version: env!("CARGO_PKG_VERSION").into(),
        libtorch: "unknown".into(),
        device: label.clone(),
        device_name: label.clone(),
        capacity_bytes: 0,
        available_bytes: 0,
        budget_bytes: budgets.planner,
        threads: 0,
        workload: shown.clone(),
        input_shape: Vec::new(),
        parameters: 0,
        pid: std::process::id(),
    };
    on(&Update::Started {
        run_id,
        hello: hello.clone(),
    });
    let mut out = ScriptSweepOutcome {
        sweep: SweepOutcome {
            status: JobStatus::Running,
            run_id: Some(run_id),
            ledger: ledger.path().display().to_string(),
            hello: Some(hello),
            points: Vec::new(),
            summary: None,
            warnings: Vec::new(),
            error: None,
            worker_exit: None,
            stderr_tail: Vec::new(),
        },
        command: shown.clone(),
        device: None,
        runs: Vec::new(),
        seconds: Vec::new(),
        comparison: None,
        baseline_run_id: None,
    };
    let plan = BatchPlan::Search {
        start: s.start,
        max: s.max,
    };
    let mut planner = Planner::new(plan, budgets.planner, None, true).costly();
    let mut ahead = Ahead {
        on: s.prestarts(),
        waiting: Vec::new(),
    };
    let mut interrupted = false;
    // A start whose processes or device memory were not released in time (see [`release`]).
    let mut released_late: Option<String> = None;
    let mut libtorch = None;
    let limit = loop {
        let (batch, predicted) = match planner.next_step() {
            Next::Done { limit } => break limit,
            Next::Skip { batch, predicted } => {
                let mut p = Point::failed(
                    batch,
                    PointStatus::OverBudget,
                    format!(
                        "predicted peak {} is above the {} budget; not run",
                        format_bytes(predicted),
                        format_bytes(planner.budget())
                    ),
                );
                p.predicted_peak_bytes = Some(predicted);
                planner.record(batch, PointStatus::OverBudget, None, None);
                add_point(ledger, run_id, &mut out.sweep, p, on)?;
                continue;
            }
            Next::Run { batch, predicted } => (batch, predicted),
        };
        on(&Update::Progress {
            batch,
            phase: Phase::Setup,
            step: 0,
            of: 0,
        });
        let begun = match ahead.take(batch) {
            Some(b) => b,
            None => {
                ahead.abort_all();
                let next = if ahead.on {
                    planner.speculate(batch, predicted)
                } else {
                    None
                };
                let host_kill = budgets.host_kill;
                let mut b = begin_start(s, batch, accel, host_kill, run_id, next.is_some())?;
                if let Some(n) = next {
                    if let Ok(nb) = begin_start(s, n, accel, host_kill, run_id, true) {
                        ahead.waiting.push(nb);
                        ahead.wait_at_gates(&mut b, &s.watch.interrupt);
                    }
                }
                b
            }
        };
        let pid = begun.launched.pid();
        let waiting: Vec<u32> = ahead.waiting.iter().map(|b| b.launched.pid()).collect();
        let (w, load) = measure(begun, accel, ledger, on, &waiting)?;
        // Nothing of this start may be left when the next one passes its gate: its processes
        // gone and the device memory it held free again.
        let fault = std::mem::replace(&mut released_late, release(pid, w.run_id, accel));
        if let Some(why) = &released_late {
            on(&Update::Warning {
                message: why.clone(),
            });
            if !out.sweep.warnings.contains(why) {
                out.sweep.warnings.push(why.clone());
            }
        }
        // Not observed from inside: its next start would not stop at a gate.
        if w.observed.is_none() {
            ahead.stop();
        }
        out.runs.push(w.run_id);
        out.seconds.push(StartTime::of(batch, &w));
        if w.interrupted {
            interrupted = true;
        }
        if out.device.is_none() {
            out.device = w.observed.as_ref().and_then(|o| o.device.clone());
            if let Some(d) = &out.device {
                ledger.set_device(run_id, d)?;
            }
            if let Some(b) = device_budget(s.budget, &w) {
                budgets.planner = b;
                planner.set_budget(b);
                ledger.set_budget(run_id, b)?;
                if let Some(h) = out.sweep.hello.as_mut() {
                    h.budget_bytes = b;
                }
            }
        }
        if libtorch.is_none() {
            libtorch = w.torch_version.clone();
            if let Some(v) = &libtorch {
                ledger.set_libtorch(run_id, v)?;
                if let Some(h) = out.sweep.hello.as_mut() {
                    h.libtorch.clone_from(v);
                }
            }
        }
        let mut p = as_point(&w, batch, planner.budget());
        failed_start(ledger, &w, &p)?;
        p.predicted_peak_bytes = predicted;
        // Out of memory while the start before still held memory: the sweep's fault, not the
        // batch's.
        if let (PointStatus::Oom, Some(why)) = (p.status, fault) {
            p.status = PointStatus::Error;
            p.message = Some(format!(
                "not an out-of-memory point: it started while {why} (run {})",
                w.run_id
            ));
        }
        if p.status == PointStatus::Ok {
            p.load = load;
        }
        // A start that ran out of memory (or crashed) says nothing of the peak its batch needs:
        // what its processes held before the failure is not on the memory line.
        let measured = matches!(p.status, PointStatus::Ok | PointStatus::OverBudget);
        planner.record(
            batch,
            p.status,
            p.peak_bytes.filter(|_| measured),
            p.samples_per_s,
        );
        add_point(ledger, run_id, &mut out.sweep, p, on)?;
        if interrupted {
            break Limit::Error;
        }
    };
    ahead.stop();
    let summary = summarize(&out.sweep.points, limit, planner.budget());
    // The baseline at the recommended batch: the speed-up of the user's own script.
    if let (Some(base), Some(accel), Some(batch), false) = (
        s.devices.first(),
        accel,
        summary.recommended_batch,
        interrupted,
    ) {
        let base_request = serde_json::json!({
            "script": true,
            "command": s.command,
            "project": s.project,
            "baseline_of": run_id,
            "devices": [base.label()],
        });
        let base_id = begin(&base.label(), budgets.host_kill, &base_request)?;
        on(&Update::Progress {
            batch,
            phase: Phase::Timed,
            step: 0,
            of: 0,
        });
        let b = begin_start(s, batch, Some(base), budgets.host_kill, base_id, false)?;
        let pid = b.launched.pid();
        let (w, load) = measure(b, Some(base), ledger, on, &[])?;
        if let Some(why) = release(pid, w.run_id, Some(base)) {
            on(&Update::Warning { message: why });
        }
        out.runs.push(w.run_id);
        out.seconds.push(StartTime::of(batch, &w));
        interrupted |= w.interrupted;
        let mut p = as_point(&w, batch, budgets.host_kill);
        failed_start(ledger, &w, &p)?;
        if p.status == PointStatus::Ok {
            p.load = load;
        }
        ledger.add_point(base_id, 0, &p)?;
        let base_points = [p];
        let base_summary = summarize(&base_points, Limit::List, budgets.host_kill);
        let ok = base_points[0].status == PointStatus::Ok;
        ledger.finish_run(
            base_id,
            if ok {
                RunStatus::Complete
            } else {
                RunStatus::Failed
            },
            Some(&base_summary),
            (!ok)
                .then(|| {
                    format!(
                        "the baseline {} did not finish at batch {batch}",
                        base.label()
                    )
                })
                .as_deref(),
        )?;
        out.baseline_run_id = Some(base_id);
        out.comparison =
            compare(&accel.label(), &out.sweep.points, &base_points, batch).map(|c| Comparison {
                cpu_run_id: Some(base_id),
                ..c
            });
        if let Some(c) = &out.comparison {
            ledger.add_sample(run_id, 0, COMPARISON_SAMPLE, c)?;
        }
    }
    let status = if interrupted {
        RunStatus::Interrupted
    } else if summary.recommended_batch.is_some() {
        RunStatus::Complete
    } else {
        RunStatus::Failed
    };
    let note = match status {
        RunStatus::Interrupted => Some(format!(
            "stopped by you after {} point(s)",
            out.sweep.points.len()
        )),
        RunStatus::Failed => Some(summary.reason.clone()),
        _ => None,
    };
    if let Some(n) = &note {
        out.sweep.error = Some(JobError {
            code: if interrupted {
                crate::error::ErrorCode::Cancelled
            } else {
                crate::error::ErrorCode::Internal
            },
            message: n.clone(),
        });
    }
    ledger.finish_run(run_id, status, Some(&summary), note.as_deref())?;
    out.sweep.summary = Some(summary);
    out.sweep.status = status.into();
    Ok(out)
}

/// One start of the command at `batch` (on `device`): begun, at its gate when `gated` (see
/// [`Ahead`]), not yet watched.
struct Begun {
    batch: u32,
    opts: WatchOptions,
    launched: Launched,
}

fn begin_start(
    s: &ScriptSweep,
    batch: u32,
    device: Option<&DeviceChoice>,
    host_kill: u64,
    sweep_id: i64,
    gated: bool,
) -> Result<Begun, CoreError> {
    let command = crate::project::fill(&s.command, Some(batch), device.map(|d| d.device.as_str()));
    let mut env = s.watch.env.clone();
    env.extend(device.map(DeviceChoice::env).unwrap_or_default());
    let opts = WatchOptions {
        batch: Some(batch),
        settle: true,
        max_time: Some(s.point_limit),
        budget_bytes: Some(host_kill),
        env,
        tag: Some(serde_json::json!({ "project": s.project, "sweep": sweep_id })),
        ..s.watch.clone()
    };
    let launched = launch(&command, &opts, gated)?;
    Ok(Begun {
        batch,
        opts,
        launched,
    })
}

/// A start watched until its steps settle, with what the rest of the machine did from its first
/// timed step on.
/// How long a start's processes may take to be gone, and its device memory to be free again,
/// once it has been stopped.
const RELEASE_BOUND: Duration = Duration::from_secs(20);

/// Ends what is left of the start `pid` (its own process group) and waits until it is gone
/// and, on CUDA, until the device lists it no more; says what still held on at the bound.
fn release(pid: u32, run_id: i64, device: Option<&DeviceChoice>) -> Option<String> {
    if let Some(left) = super::watch::end_group(pid, RELEASE_BOUND) {
        return Some(format!(
            "run {run_id}'s processes were still there {} s after it ended: {left}",
            RELEASE_BOUND.as_secs()
        ));
    }
    let index = device.and_then(|d| {
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        crate::gpu_busy::nvidia_index(&d.device, visible.as_deref())
    })?;
    let until = std::time::Instant::now() + RELEASE_BOUND;
    loop {
        let text = crate::child::tool_stdout(
            "nvidia-smi",
            &[
                "-i",
                &index.to_string(),
                "--query-compute-apps=pid,process_name,used_gpu_memory",
                "--format=csv,noheader,nounits",
            ],
        )?;
        let held = crate::load::parse_nvidia_compute_apps(&text)
            .into_iter()
            .find(|a| a.0 == pid);
        let (_, _, bytes) = held?;
        if std::time::Instant::now() >= until {
            return Some(format!(
                "run {run_id}'s process {pid} still held {} on cuda:{index} {} s after it ended",
                bytes.map_or_else(|| "memory".to_owned(), format_bytes),
                RELEASE_BOUND.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn measure(
    b: Begun,
    device: Option<&DeviceChoice>,
    ledger: &Ledger,
    on: &mut dyn FnMut(&Update),
    waiting: &[u32],
) -> Result<(WatchOutcome, Option<crate::load::PointLoad>), CoreError> {
    let matcher = EpochMatcher::new(crate::readings::DEFAULT_EPOCH_PATTERN)?;
    let mut load = crate::load::OtherLoad::new();
    // The start's own processes (its DataLoader workers) and the starts waiting at their gates
    // are the work, not other load.
    load.exclude_group(b.launched.pid());
    for g in waiting {
        load.exclude_group(*g);
    }
    if let Some(d) = device {
        load.watch_device(&d.device);
    }
    let mut timing = false;
    let batch = b.batch;
    // Each step as it comes: warming up, then timed until the step time settles.
    let mut told = 0;
    let outcome = drive(b.launched, &matcher, &b.opts, ledger, &mut |p| {
        if p.steps == told {
            return;
        }
        told = p.steps;
        let phase = if (p.steps as usize) <= SETTLE_WARMUP {
            Phase::Warmup
        } else {
            Phase::Timed
        };
        if phase == Phase::Timed && !timing {
            timing = true;
            // The starts waiting at their gates (their DataLoader workers prefetching) are
            // stopped whole while this one is timed: they cost it nothing.
            for g in waiting {
                super::watch::signal_group(*g, libc::SIGSTOP);
            }
            load.start();
        }
        on(&Update::Progress {
            batch,
            phase,
            step: p.steps,
            of: 0,
        });
    })
    .map(|w| {
        let l = timing.then(|| load.read(&[])).flatten();
        (w, l)
    });
    for g in waiting {
        super::watch::signal_group(*g, libc::SIGCONT);
    }
    outcome
}

/// How long a start begun at a gate may take to import torch (the observer's sign of life)
/// before the sweep stops beginning starts ahead: a program without torch never reaches a gate.
const ARM_WAIT: Duration = Duration::from_secs(30);

/// The least a start begun ahead is waited for once the one to measure is at its gate (and at
/// least as long again as that one took to get there).
const AHEAD_GRACE: Duration = Duration::from_secs(10);

/// Starts begun ahead of their turn. Each start of the user's program spends seconds (on the
/// H200's resnet50 script 8–13 s) on its interpreter, imports, device and data workers before its
/// first step, and the planner's next batch is often known before the current one is measured
/// ([`Planner::speculate`]). So both are begun together, each stops at a gate before its first
/// batch (the observer's, [`crate::instrument::GATE_ENV`]), and once both are there the current
/// one is let through and measured alone while the other waits, idle; its start-up cost no wall
/// time of its own. A start begun ahead that the planner does not ask for is killed unrecorded.
struct Ahead {
    on: bool,
    waiting: Vec<Begun>,
}

impl Ahead {
    fn take(&mut self, batch: u32) -> Option<Begun> {
        let i = self.waiting.iter().position(|b| b.batch == batch)?;
        Some(self.waiting.swap_remove(i))
    }

    fn abort_all(&mut self) {
        for b in self.waiting.drain(..) {
            b.launched.abort();
        }
    }

    /// Begins no more starts ahead (and ends those begun).
    fn stop(&mut self) {
        self.on = false;
        self.abort_all();
    }

    /// Waits until `main` and every start begun ahead are at their gates (or ended), so that
    /// `main` is measured with the others idle. Gives up on one that takes much longer than
    /// `main` did (killed), and on starting ahead altogether when `main` shows no observer.
    fn wait_at_gates(&mut self, main: &mut Begun, interrupt: &std::sync::atomic::AtomicI32) {
        let ready = |s: GateState| matches!(s, GateState::Waiting | GateState::Exited);
        let mut main_ready_at = None;
        loop {
            if interrupt.load(std::sync::atomic::Ordering::SeqCst) != 0 {
                return;
            }
            let m = main.launched.gate_state();
            let others: Vec<bool> = self
                .waiting
                .iter_mut()
                .map(|b| ready(b.launched.gate_state()))
                .collect();
            if ready(m) && others.iter().all(|r| *r) {
                return;
            }
            let age = main.launched.age();
            let no_gate = match m {
                GateState::Starting => age > ARM_WAIT,
                GateState::Armed => age > main.opts.max_time.unwrap_or(ARM_WAIT),
                _ => false,
            };
            if no_gate {
                self.stop();
                return;
            }
            if ready(m) {
                let at = *main_ready_at.get_or_insert(age);
                if age > at + at.max(AHEAD_GRACE) {
                    let late: Vec<Begun> = {
                        let (ok, late): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
                            .into_iter()
                            .zip(others)
                            .partition(|(_, r)| *r);
                        self.waiting = ok.into_iter().map(|(b, _)| b).collect();
                        late.into_iter().map(|(b, _)| b).collect()
                    };
                    for b in late {
                        b.launched.abort();
                    }
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl ScriptSweep {
    /// Whether to begin starts ahead ([`Prestart`]); the observer is what stops them at a gate.
    fn prestarts(&self) -> bool {
        self.watch.instrument
            && match self.prestart {
                Prestart::On => true,
                Prestart::Off => false,
                Prestart::Auto => self
                    .devices
                    .last()
                    .map_or_else(default_device, |d| d.device.clone())
                    .starts_with("cuda"),
            }
    }
}

/// A start as a sweep point: over the planner's budget when its measured peak is.
fn as_point(w: &WatchOutcome, batch: u32, budget: u64) -> Point {
    let mut p = w
        .as_point()
        .unwrap_or_else(|| Point::failed(batch, PointStatus::Error, format!("run {}", w.run_id)));
    p.batch = batch;
    if p.status == PointStatus::Ok && p.peak_bytes.is_some_and(|b| b > budget) {
        p.status = PointStatus::OverBudget;
        p.message = Some(format!(
            "peak {} is above the {} budget (run {})",
            format_bytes(p.peak_bytes.unwrap_or(0)),
            format_bytes(budget),
            w.run_id
        ));
    }
    if p.status == PointStatus::Ok && p.samples_per_s.is_none() {
        p.status = PointStatus::Error;
        p.message = Some(no_iterations(w));
    }
    if p.status != PointStatus::Ok
        && p.message
            .as_deref()
            .is_none_or(|m| m == format!("run {}", w.run_id))
    {
        p.message = Some(describe_failure(w));
    }
    p
}

/// A start that ran to its end but gave nothing to time is a failed start in the ledger, with
/// the reason, not a complete one.
fn failed_start(ledger: &Ledger, w: &WatchOutcome, p: &Point) -> Result<(), CoreError> {
    if p.status == PointStatus::Error && !w.interrupted {
        ledger.set_status(
            w.run_id,
            RunStatus::Failed,
            p.message.as_deref().unwrap_or("no point"),
        )?;
    }
    Ok(())
}

/// Why a start gave no iteration to time, said plainly.
fn no_iterations(w: &WatchOutcome) -> String {
    match &w.observed {
        Some(o) if o.steps == 0 => format!(
            "no iteration seen in run {}: this loop drew no DataLoader batch and called no \
             module, backward or optimizer step that Headroom could see (or print \
             `headroom-step` after each step)",
            w.run_id
        ),
        Some(_) => format!(
            "run {} ended after {} iteration(s), too few to time",
            w.run_id, w.steps
        ),
        None => format!(
            "run {} finished without steps to time: it was not observed from inside (not a \
             Python program that imports torch); print `headroom-step` after each step",
            w.run_id
        ),
    }
}

/// Why a start did not give a point, for the table.
fn describe_failure(w: &WatchOutcome) -> String {
    if w.interrupted {
        return format!("stopped by you (run {})", w.run_id);
    }
    if w.oom {
        return format!("out of memory (run {})", w.run_id);
    }
    if w.over_budget {
        return format!(
            "its processes passed {} (run {})",
            format_bytes(w.budget_bytes.unwrap_or(0)),
            w.run_id
        );
    }
    match (w.exit_code, w.signal) {
        (_, Some(sig)) if !w.stopped_at_limit => format!(
            "the command was {} (run {})",
            super::watch::describe_signal(sig),
            w.run_id
        ),
        (Some(c), _) if c != 0 => format!("the command exited with code {c} (run {})", w.run_id),
        _ => format!("run {} ended before its steps settled", w.run_id),
    }
}

fn add_point(
    ledger: &Ledger,
    run_id: i64,
    out: &mut SweepOutcome,
    p: Point,
    on: &mut dyn FnMut(&Update),
) -> Result<(), CoreError> {
    let seq = u32::try_from(out.points.len()).unwrap_or(u32::MAX);
    ledger.add_point(run_id, seq, &p)?;
    let cautions = p.cautions();
    on(&Update::Point { point: p.clone() });
    out.points.push(p);
    for w in cautions {
        if !out.warnings.contains(&w) {
            on(&Update::Warning { message: w.clone() });
            out.warnings.push(w);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_with_threads_and_refuse_nonsense() {
        let d = parse_devices("cpu@1, cpu@2").expect("pair");
        assert_eq!(d[0].label(), "cpu@1");
        assert_eq!(d[1].env(), vec![("OMP_NUM_THREADS".into(), "2".into())]);
        assert_eq!(parse_devices("cpu,mps").expect("pair")[1].device, "mps");
        for bad in ["cpu", "cpu,mps,cuda", "cpu@0,mps", "cpu,m ps", "cpu@x,mps"] {
            assert!(parse_devices(bad).is_err(), "{bad}");
        }
        let cmd: Vec<String> = ["python", "t.py", "--bs={batch}", "--device", "{device}"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            crate::project::fill(&cmd, Some(64), Some(&d[1].device))[2..],
            ["--bs=64".to_owned(), "--device".into(), "cpu".into()]
        );
    }
}
