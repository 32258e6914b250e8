//! The Readiness and Sweep panels' commands: thin `async` adapters over `headroom_core`.
//! Blocking work (probing interpreters, the ledger, a sweep) runs off the main thread, so the
//! tray never freezes. The last readiness report lives in its own slot ([`ReadinessSlot`]); the
//! sweep's is the core's [`headroom_core::jobs::live::SweepSlot`] (see [`crate::sweep`]).

use std::path::PathBuf;
use std::sync::Mutex;

use headroom_core::jobs;
use headroom_core::jobs::live::SweepOrder;
use headroom_model::protocol::SweepRequest;
use headroom_probe::readiness::Report;
use headroom_report::plot::{sweep_svg, ChartSpec};
use headroom_store::ledger::RunRecord;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};

use crate::error::AppError;
use crate::sweep::{SweepSnapshot, CHART};
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

pub use headroom_core::jobs::live::SweepForm;

/// Checks the form and turns it into the worker's request (the core's one check, which
/// `headroom sweep` uses too).
pub fn request(form: &SweepForm) -> Result<SweepRequest, AppError> {
    Ok(headroom_core::jobs::live::request(form)?)
}

/// Starts a sweep in the background; `on_update` receives the whole snapshot at every change.
/// Closing the popover does not stop it; [`cancel_sweep`] does.
#[tauri::command]
pub async fn start_sweep(
    app: AppHandle,
    form: SweepForm,
    on_update: Channel<SweepSnapshot>,
) -> Result<SweepSnapshot, AppError> {
    // Checked here first: a bad value is said at once, wherever the sweep would run.
    request(&form)?;
    crate::sweep::start(app, SweepOrder::Form { form }, on_update).await
}

/// Cancels the running sweep (its points stay in the ledger, the run is marked interrupted).
#[tauri::command]
pub async fn cancel_sweep(app: AppHandle) -> Result<bool, AppError> {
    Ok(crate::sweep::cancel(&app))
}

/// The current (or last) sweep, for a popover opened mid-run.
#[tauri::command]
pub async fn sweep_snapshot(app: AppHandle) -> Result<Option<SweepSnapshot>, AppError> {
    Ok(crate::sweep::snapshot(&app))
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
