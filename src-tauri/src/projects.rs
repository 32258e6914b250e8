//! The user's projects in the app: the picker at the top of the popover, the add form, and
//! "Sweep my training" — `batch=auto` on the project (the core's script sweep, the same job
//! `headroom run --project P --sweep batch=auto` runs), shown live in the Sweep panel's snapshot
//! with the same chart and Cancel.

use std::sync::Arc;
use std::time::Duration;

use headroom_core::jobs::{self, sweep::CancelToken, JobStatus};
use headroom_core::project::Project;
use headroom_model::budget::BudgetSpec;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};

use crate::error::{AppError, ErrorCode};
use crate::overview::OverviewSlot;
use crate::sweep::{Done, SweepSlot, SweepSnapshot};
use crate::util::blocking;

/// The projects, by name.
#[tauri::command]
pub async fn list_projects() -> Result<Vec<Project>, AppError> {
    blocking(|| Ok(headroom_core::project::load()?.into_values().collect())).await
}

/// Adds (or replaces) a project; the same checks as `headroom project add`.
#[tauri::command]
pub async fn add_project(project: Project, replace: bool) -> Result<Project, AppError> {
    blocking(move || {
        project.validate()?;
        headroom_core::project::check_usable(&project)?;
        headroom_core::project::add(&project, replace)?;
        Ok(project)
    })
    .await
}

/// Picks the project the Overview is judged from (none: every run).
#[tauri::command]
pub async fn select_project(
    app: AppHandle,
    overview: State<'_, OverviewSlot>,
    name: Option<String>,
) -> Result<bool, AppError> {
    if let Some(n) = &name {
        let n = n.clone();
        blocking(move || Ok(headroom_core::project::get(&n)?)).await?;
    }
    overview.choose(&app, name);
    Ok(true)
}

/// The project the Overview is judged from now (none: every run): a popover made again — after
/// a close dropped its page, or in a new popover process — opens on it, not on the first.
#[tauri::command]
pub async fn selected_project(
    overview: State<'_, OverviewSlot>,
) -> Result<Option<String>, AppError> {
    Ok(overview.project())
}

/// "Sweep my training": `batch=auto` on the project, live in the Sweep panel's snapshot;
/// `cancel_sweep` stops the running start and keeps what was measured. With `devices`
/// ("Compare with the CPU": `cpu,mps`, or empty for this machine's CPU and accelerator) the
/// command's `{device}` goes over them: the accelerator (the last) is swept, then the CPU (the
/// first) runs once at the recommended batch, and the snapshot carries the speed-up.
#[tauri::command]
pub async fn sweep_project(
    app: AppHandle,
    state: State<'_, SweepSlot>,
    name: String,
    devices: Option<String>,
    on_update: Channel<SweepSnapshot>,
) -> Result<SweepSnapshot, AppError> {
    let project = {
        let n = name.clone();
        blocking(move || {
            let p = headroom_core::project::get(&n)?;
            headroom_core::project::check_usable(&p)?;
            Ok(p)
        })
        .await?
    };
    if !project.has("batch") {
        return Err(AppError::new(
            ErrorCode::BadRequest,
            format!(
                "project {name}'s command has no {{batch}}; add it where the batch size goes (e.g. --batch-size {{batch}}) to sweep it"
            ),
        ));
    }
    let devices = match devices.as_deref().map(str::trim) {
        None => Vec::new(),
        Some("") => jobs::usersweep::default_devices().ok_or_else(|| {
            AppError::new(
                ErrorCode::BadRequest,
                "this machine has no accelerator to compare the CPU with; give the pair to compare, e.g. cpu@1,cpu@4",
            )
        })?,
        Some(text) => jobs::usersweep::parse_devices(text)?,
    };
    if !devices.is_empty() && !project.has("device") {
        return Err(AppError::new(
            ErrorCode::BadRequest,
            format!(
                "project {name}'s command has no {{device}}; add it where the device goes (e.g. --device {{device}}) to compare devices"
            ),
        ));
    }
    let thresholds = headroom_store::config::load()?.epochs;
    let interrupt = Arc::new(std::sync::atomic::AtomicI32::new(0));
    let mut watch = jobs::watch::WatchOptions::for_pid(Duration::from_millis(250), thresholds);
    watch.instrument = true;
    watch.stdout_to_stderr = true;
    watch.interrupt = Arc::clone(&interrupt);
    watch.dir = Some(project.dir.clone());
    let spec = jobs::usersweep::ScriptSweep {
        // Swept alone, `{device}` is this machine's accelerator (the CPU where there is none).
        command: if devices.is_empty() && project.has("device") {
            headroom_core::project::fill(
                &project.argv(),
                None,
                Some(&jobs::usersweep::default_device()),
            )
        } else {
            project.argv()
        },
        project: Some(project.name.clone()),
        start: 16,
        max: 65536,
        budget: BudgetSpec::Default,
        devices,
        point_limit: Duration::from_secs(180),
        prestart: jobs::usersweep::Prestart::Auto,
        watch,
    };
    jobs::usersweep::check(&spec)?;
    let first = SweepSnapshot {
        running: true,
        workload: spec.command.join(" "),
        device: "script".into(),
        message: format!("starting {}", project.name),
        status: JobStatus::Running,
        ..SweepSnapshot::default()
    };
    let cancel = CancelToken::new("cancelled from the app");
    // Cancel reaches the running start through the interrupt flag the watch polls.
    let interrupt = Some(interrupt);
    crate::sweep::launch(
        &app,
        &state,
        first,
        cancel,
        interrupt,
        on_update,
        move |on| {
            let ledger = jobs::open_ledger_for_job()?;
            let o = jobs::usersweep::run_script_sweep(&spec, &ledger, on)?;
            Ok(Done {
                sweep: o.sweep,
                device: o.device,
                comparison: o.comparison,
            })
        },
    )
}
