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
pub use devices::{default_device, default_devices, parse_devices, DeviceChoice};

mod devices;
mod start;
use start::{add_point, as_point, begin_start, failed_start, measure, release, Ahead, Released};
#[cfg(test)]
mod tests;

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
    /// Started at a gate: how long after its start the gate opened. For a start begun ahead of
    /// its turn ([`StartTime::ahead`]), its start-up up to there cost the sweep no wall time;
    /// for another, the gate held it until the start begun beside it was at its own.
    pub waited_s: Option<f64>,
    /// Begun ahead of its turn, while the start before it was measured.
    pub ahead: bool,
    /// From its stop until its processes (DataLoader workers too) were gone.
    pub release_s: Option<f64>,
    /// From its stop until the device listed it no more (CUDA): the next start's gate opened
    /// then.
    pub device_free_s: Option<f64>,
}

impl StartTime {
    fn of(batch: u32, w: &WatchOutcome, r: &Released, ahead: bool) -> Self {
        Self {
            batch,
            seconds: w.seconds,
            first_step_s: w.first_step_s,
            waited_s: w.waited_s,
            ahead,
            release_s: Some(r.processes_s),
            device_free_s: r.device_s,
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
        // A start begun ahead near a knee probe serves as the probe.
        let taken = ahead.take_if(|b| planner.accepts(batch, b));
        let (batch, predicted) = match &taken {
            Some(b) if b.batch != batch => (b.batch, planner.predict_peak(b.batch)),
            _ => (batch, predicted),
        };
        on(&Update::Progress {
            batch,
            phase: Phase::Setup,
            step: 0,
            of: 0,
        });
        let was_ahead = taken.is_some();
        let begun = match taken {
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
        let seen = w.observed.as_ref().and_then(|o| o.device.as_deref());
        let released = release(pid, w.run_id, accel.map(|d| d.device.as_str()).or(seen));
        let fault = std::mem::replace(&mut released_late, released.late.clone());
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
        out.seconds
            .push(StartTime::of(batch, &w, &released, was_ahead));
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
            p.conditions = w.conditions.clone();
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
        if let Some(share) = p.noisy_share() {
            planner.noisy(batch, share);
        }
        add_point(ledger, run_id, &mut out.sweep, p, on)?;
        if interrupted {
            break Limit::Error;
        }
    };
    ahead.stop();
    let mut summary = summarize(&out.sweep.points, limit, planner.budget());
    if let Some(fit) = planner.unverified_fit() {
        crate::summary::predicted_fit(
            &mut summary,
            fit,
            planner.predict_peak(fit),
            planner.budget(),
        );
    }
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
        let released = release(pid, w.run_id, Some(base.device.as_str()));
        if let Some(why) = released.late.clone() {
            on(&Update::Warning { message: why });
        }
        out.runs.push(w.run_id);
        out.seconds.push(StartTime::of(batch, &w, &released, false));
        interrupted |= w.interrupted;
        let mut p = as_point(&w, batch, budgets.host_kill);
        failed_start(ledger, &w, &p)?;
        if p.status == PointStatus::Ok {
            p.load = load;
            p.conditions = w.conditions.clone();
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
