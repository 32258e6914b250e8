//! The Readiness and Sweep panels' commands: thin `async` adapters over `headroom_core`.
//! Blocking work (probing interpreters, the ledger, a sweep) runs off the main thread, so the
//! tray never freezes. The last readiness report lives in its own slot ([`ReadinessSlot`]); the
//! sweep's is [`crate::sweep::SweepSlot`].

use std::path::PathBuf;
use std::sync::Mutex;

use headroom_core::jobs::JobStatus;
use headroom_core::jobs::{self, sweep::CancelToken};
use headroom_model::protocol::SweepRequest;
use headroom_model::requests::{SweepInput, WorkloadInput};
use headroom_probe::readiness::Report;
use headroom_report::plot::{sweep_svg, ChartSpec};
use headroom_store::ledger::RunRecord;
use serde::Deserialize;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};

use crate::error::AppError;
use crate::sweep::{SweepSlot, SweepSnapshot, CHART};
use crate::tray::TrayPart;
use crate::util::{blocking, lock};

/// The Readiness panel's slot: the report of the last check this session.
#[derive(Debug, Default)]
pub struct ReadinessSlot(Mutex<Option<Report>>);

/// Runs doctor (as `headroom doctor` does), records it, and tells the tray.
#[tauri::command]
pub async fn readiness(
    app: AppHandle,
    state: State<'_, ReadinessSlot>,
) -> Result<Report, AppError> {
    // A check that found what the last one found adds no run (each start and opening
    // refreshes the lights).
    let report = blocking(|| Ok(jobs::doctor::refresh("app")?.report)).await?;
    *lock(&state.0) = Some(report.clone());
    crate::tray::tell(&app, TrayPart::Readiness(Box::new(report.clone())));
    Ok(report)
}

/// The report of the last readiness check this session, if any.
#[tauri::command]
pub async fn last_readiness(state: State<'_, ReadinessSlot>) -> Result<Option<Report>, AppError> {
    Ok(lock(&state.0).clone())
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

/// Starts a sweep in the background; `on_update` receives the whole snapshot at every change.
/// Closing the popover does not stop it; [`cancel_sweep`] does.
#[tauri::command]
pub async fn start_sweep(
    app: AppHandle,
    state: State<'_, SweepSlot>,
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
    let first = SweepSnapshot {
        running: true,
        workload: req.workload.clone(),
        device: req.device.clone(),
        host: form.host.clone().filter(|h| !h.is_empty()),
        message: "starting the worker".into(),
        status: JobStatus::Running,
        ..SweepSnapshot::default()
    };
    let cancel = CancelToken::new("cancelled from the app");
    let token = cancel.clone();
    crate::sweep::launch(&app, &state, first, cancel, None, on_update, move |on| {
        let ledger = jobs::open_ledger_for_job()?;
        Ok(jobs::sweep::run_sweep_on(&launcher, &req, &ledger, &token, on)?.into())
    })
}

/// Cancels the running sweep (its points stay in the ledger, the run is marked interrupted).
#[tauri::command]
pub async fn cancel_sweep(state: State<'_, SweepSlot>) -> Result<bool, AppError> {
    Ok(state.cancel())
}

/// The current (or last) sweep, for a popover opened mid-run.
#[tauri::command]
pub async fn sweep_snapshot(
    state: State<'_, SweepSlot>,
) -> Result<Option<SweepSnapshot>, AppError> {
    // None this session: the last sweep of an earlier popover process, as it ended.
    Ok(state.snapshot().or_else(|| crate::kept::kept("sweep")))
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
    use headroom_model::protocol::BatchPlan;

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
