//! The commands the UI calls: thin `async` adapters over `headroom_core`. Blocking work (probing
//! interpreters, the ledger, a sweep) runs off the main thread, so the tray never freezes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use headroom_core::jobs::JobStatus;
use headroom_core::jobs::{self, doctor::DoctorOptions, sweep::CancelToken, sweep::Update};
use headroom_model::protocol::{progress_line, SweepRequest};
use headroom_model::requests::{SweepInput, WorkloadInput};
use headroom_probe::readiness::Report;
use headroom_report::plot::{sweep_svg, ChartSpec};
use headroom_store::ledger::RunRecord;
use serde::Deserialize;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};

use crate::error::{AppError, ErrorCode};
use crate::state::{lock, AppState, RunningSweep, SweepSnapshot};

/// Chart size in the popover (CSS pixels).
const CHART: (u32, u32) = (360, 420);

/// Runs `f` on the blocking pool, off the main thread.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    tauri::async_runtime::spawn_blocking(f).await.map_err(|e| {
        AppError::new(
            ErrorCode::Internal,
            format!("the background task failed: {e}"),
        )
    })?
}

/// Runs doctor (as `headroom doctor` does), records it, and repaints the tray.
#[tauri::command]
pub async fn readiness(app: AppHandle, state: State<'_, AppState>) -> Result<Report, AppError> {
    let report = blocking(|| {
        let exe = jobs::worker_binary()?;
        let mut report = jobs::doctor::check(&exe, &DoctorOptions::default(), &mut |_| {});
        // A ledger that cannot be written (damaged, disk full) does not hide the verdict: the
        // report says it was not recorded and why, with what to do.
        if let Err(e) =
            jobs::open_ledger().and_then(|l| jobs::doctor::record(&l, &report, r#"{"from":"app"}"#))
        {
            report
                .notes
                .push(format!("This check was not recorded in the ledger: {e}"));
        }
        Ok(report)
    })
    .await?;
    *lock(&state.report) = Some(report.clone());
    crate::tray::refresh(&app);
    Ok(report)
}

/// The report of the last readiness check this session, if any.
#[tauri::command]
pub async fn last_readiness(state: State<'_, AppState>) -> Result<Option<Report>, AppError> {
    Ok(lock(&state.report).clone())
}

/// What the Sweep panel's form sends.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
pub struct SweepForm {
    /// A built-in workload or the path of a TorchScript file.
    pub workload: String,
    /// One sample's shape without the batch (`3x224x224`), for a TorchScript file.
    pub input_shape: Option<String>,
    pub device: String,
    /// Typed as the enum for the UI; checked by the core's one parser (the same message as the
    /// CLI's for a value the UI could not have sent).
    #[ts(as = "headroom_model::protocol::Dtype")]
    pub dtype: String,
    /// A size (`12GiB`), a share (`80%`), or `default`.
    pub budget: String,
    pub max_batch: Option<u32>,
    #[ts(as = "headroom_model::protocol::Mode")]
    pub mode: String,
    /// A remote host profile to run the worker on (over ssh); this machine when absent.
    #[serde(default)]
    #[ts(optional)]
    pub host: Option<String>,
    /// Every doubling, each point run (no memory prediction, no ×4 strides, no jump to the
    /// predicted limit): slower, for comparing with an older sweep or a model whose memory does
    /// not grow in a line (`sweep --no-predict`).
    #[serde(default)]
    #[ts(optional)]
    pub every_doubling: Option<bool>,
}

/// Checks the form and turns it into the worker's request: the core's sweep input, the one
/// check `headroom sweep` uses too.
pub fn request(form: &SweepForm) -> Result<SweepRequest, AppError> {
    let input = SweepInput {
        what: WorkloadInput {
            workload: form.workload.clone(),
            input_shape: form.input_shape.clone(),
            device: form.device.clone(),
            dtype: form.dtype.clone(),
        },
        budget: form.budget.clone(),
        mode: form.mode.clone(),
        max_batch: form.max_batch,
        predict: !form.every_doubling.unwrap_or(false),
        ..SweepInput::default()
    };
    Ok(input.request()?)
}

pub fn redraw(s: &mut SweepSnapshot) {
    match sweep_svg(&ChartSpec {
        points: &s.points,
        summary: s.summary.as_ref(),
        budget_bytes: s.budget_bytes,
        width: CHART.0,
        height: CHART.1,
    }) {
        Ok(svg) => s.chart_svg = svg,
        Err(e) => s.message = e.to_string(),
    }
}

/// Closes a sweep's snapshot with how it ended (a built-in or a script sweep's outcome, or the
/// error that stopped it before a run was recorded), redrawn; returns the last snapshot to send.
pub fn finish(
    s: &mut SweepSnapshot,
    outcome: Result<jobs::sweep::SweepOutcome, headroom_store::CoreError>,
) -> SweepSnapshot {
    s.running = false;
    match outcome {
        Ok(o) => {
            s.status = o.status;
            s.summary.clone_from(&o.summary);
            s.points.clone_from(&o.points);
            s.error.clone_from(&o.error);
            for w in &o.warnings {
                if !s.warnings.contains(w) {
                    s.warnings.push(w.clone());
                }
            }
            s.message = match (&o.summary, &o.error) {
                (_, Some(e)) => e.message.clone(),
                (Some(sum), None) => sum.reason.clone(),
                (None, None) => format!("finished: {}", o.status),
            };
        }
        Err(e) => {
            s.status = JobStatus::Error;
            s.message = e.to_string();
            s.error = Some(headroom_core::jobs::sweep::JobError {
                code: AppError::from(e).code,
                message: s.message.clone(),
            });
        }
    }
    redraw(s);
    s.clone()
}

/// Applies one update of the running sweep to its snapshot.
pub fn apply(s: &mut SweepSnapshot, u: &Update) {
    match u {
        Update::WorkerStarted { pid } => s.message = format!("worker started (pid {pid})"),
        Update::Started { run_id, hello } => {
            s.run_id = Some(*run_id);
            s.device.clone_from(&hello.device);
            s.device_name = Some(hello.device_name.clone());
            s.budget_bytes = Some(hello.budget_bytes);
            s.message = format!("run {run_id} on {}", hello.device_name);
            redraw(s);
        }
        Update::Progress {
            batch,
            phase,
            step,
            of,
        } => s.message = progress_line(*batch, *phase, *step, *of),
        Update::Point { point } => {
            headroom_model::protocol::upsert_point(&mut s.points, point.clone());
            redraw(s);
        }
        Update::Warning { message } => {
            s.message = format!("warning: {message}");
            if !s.warnings.contains(message) {
                s.warnings.push(message.clone());
            }
        }
    }
}

/// Starts a sweep in the background; `on_update` receives the whole snapshot at every change.
/// Closing the popover does not stop it; [`cancel_sweep`] does.
#[tauri::command]
pub async fn start_sweep(
    app: AppHandle,
    state: State<'_, AppState>,
    form: SweepForm,
    on_update: Channel<SweepSnapshot>,
) -> Result<SweepSnapshot, AppError> {
    let req = request(&form)?;
    let launcher = match form.host.as_deref().filter(|h| !h.is_empty()) {
        Some(name) => {
            // Under the edit lock: ssh must know the name before it is used.
            let (profile, _) =
                headroom_core::remote::Hosts::edit(&headroom_core::remote::ssh_dir()?, |hosts| {
                    Ok(hosts.get(name)?.clone())
                })?;
            jobs::sweep::Launcher::Remote {
                profile,
                timeout: std::time::Duration::from_secs(15),
            }
        }
        None => jobs::sweep::Launcher::Local(jobs::worker_binary()?),
    };
    let mut slot = lock(&state.sweep);
    if slot.as_ref().is_some_and(RunningSweep::is_running) {
        return Err(AppError::new(
            ErrorCode::Busy,
            "a sweep is already running; cancel it or wait for it to finish",
        ));
    }
    let snapshot = Arc::new(Mutex::new(SweepSnapshot {
        running: true,
        workload: req.workload.clone(),
        device: req.device.clone(),
        host: form.host.clone().filter(|h| !h.is_empty()),
        message: "starting the worker".into(),
        status: JobStatus::Running,
        ..SweepSnapshot::default()
    }));
    redraw(&mut lock(&snapshot));
    let first = lock(&snapshot).clone();
    let cancel = CancelToken::new("cancelled from the app");
    let (snap, token, handle) = (Arc::clone(&snapshot), cancel.clone(), app.clone());
    let thread = std::thread::spawn(move || {
        let send = |s: &SweepSnapshot| {
            let _ = on_update.send(s.clone());
        };
        let outcome = jobs::open_ledger_for_job().and_then(|ledger| {
            jobs::sweep::run_sweep_on(&launcher, &req, &ledger, &token, &mut |u| {
                let copy = {
                    let mut s = lock(&snap);
                    apply(&mut s, u);
                    s.clone()
                };
                send(&copy);
                if matches!(u, Update::Point { .. } | Update::Started { .. }) {
                    crate::tray::refresh(&handle);
                }
            })
        });
        let last = finish(&mut lock(&snap), outcome);
        send(&last);
        crate::tray::refresh(&handle);
    });
    *slot = Some(RunningSweep {
        cancel,
        snapshot,
        _thread: Some(thread),
    });
    drop(slot);
    crate::tray::refresh(&app);
    Ok(first)
}

/// Cancels the running sweep (its points stay in the ledger, the run is marked interrupted).
#[tauri::command]
pub async fn cancel_sweep(state: State<'_, AppState>) -> Result<bool, AppError> {
    let slot = lock(&state.sweep);
    match slot.as_ref().filter(|s| s.is_running()) {
        Some(s) => {
            s.cancel.cancel();
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The current (or last) sweep, for a popover opened mid-run.
#[tauri::command]
pub async fn sweep_snapshot(state: State<'_, AppState>) -> Result<Option<SweepSnapshot>, AppError> {
    Ok(lock(&state.sweep).as_ref().map(RunningSweep::snapshot))
}

/// The newest runs in the ledger.
#[tauri::command]
pub async fn list_runs(limit: Option<u32>) -> Result<Vec<RunRecord>, AppError> {
    blocking(move || Ok(jobs::open_ledger()?.list_runs(limit.unwrap_or(30).min(500))?)).await
}

/// The chart of a recorded sweep.
#[tauri::command]
pub async fn chart_for_run(run_id: i64) -> Result<String, AppError> {
    blocking(move || {
        let (run, points) = jobs::open_ledger()?.get_run(run_id)?;
        Ok(sweep_svg(&ChartSpec {
            points: &points,
            summary: run.summary.as_ref(),
            budget_bytes: run.budget_bytes,
            width: CHART.0,
            height: CHART.1,
        })?)
    })
    .await
}

/// Where the app finds things: unused paths are reported, not guessed.
pub fn describe_worker() -> String {
    jobs::worker_binary().map_or_else(|e| e.to_string(), |p: PathBuf| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use headroom_model::protocol::{BatchPlan, Hello, Phase, Point, PointStatus, PROTOCOL_VERSION};

    use super::*;

    fn form() -> SweepForm {
        SweepForm {
            workload: "mlp".into(),
            input_shape: None,
            device: "cpu".into(),
            dtype: "f32".into(),
            budget: "default".into(),
            max_batch: Some(64),
            mode: "train".into(),
            host: None,
            every_doubling: None,
        }
    }

    #[test]
    fn the_form_becomes_a_request_or_a_clear_error() {
        let req = request(&form()).expect("valid");
        assert_eq!(req.plan, BatchPlan::Search { start: 1, max: 64 });
        assert!(req.predict, "the default sweep predicts and strides");
        let every = request(&SweepForm {
            every_doubling: Some(true),
            ..form()
        })
        .expect("valid");
        assert!(!every.predict, "'every doubling' is `sweep --no-predict`");
        let ts = request(&SweepForm {
            workload: "/m/model.pt".into(),
            input_shape: Some("3x32x32".into()),
            ..form()
        })
        .expect("valid");
        assert_eq!(ts.input_shape, Some(vec![3, 32, 32]));
        for (bad, code, words) in [
            (
                SweepForm {
                    dtype: "f64".into(),
                    ..form()
                },
                "invalid_input",
                "f64",
            ),
            (
                SweepForm {
                    budget: "lots".into(),
                    ..form()
                },
                "invalid_input",
                "lots",
            ),
            (
                SweepForm {
                    max_batch: Some(0),
                    ..form()
                },
                "invalid_input",
                "1 or more",
            ),
            (
                SweepForm {
                    workload: " ".into(),
                    ..form()
                },
                "invalid_input",
                "workload",
            ),
            (
                SweepForm {
                    input_shape: Some("3xx".into()),
                    ..form()
                },
                "invalid_input",
                "3xx",
            ),
        ] {
            let e = request(&bad).expect_err("refused");
            assert_eq!(e.code, code);
            assert!(
                e.message.contains(words),
                "{words:?} not in {:?}",
                e.message
            );
        }
    }

    #[test]
    fn updates_fill_the_snapshot_and_redraw_the_chart() {
        let mut s = SweepSnapshot {
            running: true,
            ..SweepSnapshot::default()
        };
        let hello: Hello = serde_json::from_value(serde_json::json!({
            "protocol": PROTOCOL_VERSION, "headroom_version": "0.1.0", "libtorch": "2.11.0",
            "device": "cpu", "device_name": "AMD EPYC", "capacity_bytes": 25_000_000_000u64,
            "available_bytes": 20_000_000_000u64, "budget_bytes": 18_000_000_000u64, "threads": 2,
            "workload": "mlp", "input_shape": [784], "parameters": 1_863_690, "pid": 42
        }))
        .expect("a hello");
        apply(&mut s, &Update::Started { run_id: 9, hello });
        assert_eq!((s.run_id, s.budget_bytes), (Some(9), Some(18_000_000_000)));
        assert!(s.chart_svg.contains("waiting for the first point"));
        apply(
            &mut s,
            &Update::Progress {
                batch: 4,
                phase: Phase::Timed,
                step: 3,
                of: 10,
            },
        );
        assert_eq!(s.message, "batch 4: timed steps 3/10");
        let mut p = Point::failed(4, PointStatus::Ok, "");
        p.samples_per_s = Some(1234.0);
        p.peak_bytes = Some(400 << 20);
        apply(&mut s, &Update::Point { point: p });
        assert_eq!(s.points.len(), 1);
        assert!(!s.chart_svg.contains("waiting for the first point"));
        assert!(s.chart_svg.contains("samples/s"));
    }

    #[test]
    fn core_errors_keep_a_code_the_ui_can_branch_on() {
        let e = AppError::from(headroom_store::CoreError::NoSuchRun(5));
        assert_eq!(e.code, "not_found");
        let e = AppError::from(headroom_store::CoreError::Worker("cannot start".into()));
        assert_eq!(e.code, "worker");
        assert_eq!(
            serde_json::to_value(&e).expect("json"),
            serde_json::json!({"code": "worker", "message": "cannot start"})
        );
    }
}
