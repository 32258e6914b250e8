//! The user's projects in the app: the picker at the top of the popover, the add form, and
//! "Sweep my training" — `batch=auto` on the project (the core's script sweep, the same job
//! `headroom run --project P --sweep batch=auto` runs), shown live in the Sweep panel's snapshot
//! with the same chart and Cancel.

use headroom_core::jobs::live::SweepOrder;
use headroom_core::project::Project;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};

use crate::error::AppError;
use crate::overview::OverviewSlot;
use crate::sweep::SweepSnapshot;
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
/// first) runs once at the recommended batch, and the snapshot carries the speed-up. The checks
/// and the job are the core's ([`headroom_core::jobs::live::prepare`]).
#[tauri::command]
pub async fn sweep_project(
    app: AppHandle,
    name: String,
    devices: Option<String>,
    on_update: Channel<SweepSnapshot>,
) -> Result<SweepSnapshot, AppError> {
    crate::sweep::start(app, SweepOrder::Project { name, devices }, on_update).await
}
