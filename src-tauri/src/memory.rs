//! The Memory panel's commands: `epochs` on a workload, the user's project run observed, or a
//! running process watched from outside; each streams a whole [`MemorySnapshot`] through a
//! channel, with the chart redrawn. The jobs are the core's ([`headroom_core::jobs::live_memory`]):
//! under `headroom-tray` the tray runs them (they go on when the popover is closed and this
//! process has ended) and this process mirrors them ([`TrayMemory`]); run alone, the app runs
//! them in its own slot.

use headroom_core::jobs::live::Change;
use headroom_core::jobs::live_memory::{self, MemoryOrder};
use headroom_core::jobs::{self, watch::WatchOutcome};
use headroom_core::menubar::ToTray;
use headroom_model::epochs::EpochThresholds;
use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime};

use crate::error::{AppError, ErrorCode};
use crate::tray::{MemoryLine, TrayPart};
use crate::util::blocking;

pub use headroom_core::jobs::live_memory::{EpochsForm, MemorySlot, MemorySnapshot};

/// The tray's memory job, as this popover's process hears of it.
pub type TrayMemory = crate::mirror::Mirror<MemorySnapshot>;

/// A process the user may watch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ProcessInfo {
    pub pid: u32,
    pub command: String,
    pub rss_bytes: u64,
}

/// A wrapped run as the panel shows it ([`live_memory::wrapped_snapshot`]).
pub fn wrapped_snapshot(o: &WatchOutcome, t: &EpochThresholds) -> MemorySnapshot {
    live_memory::wrapped_snapshot(o, t)
}

/// The user's newest wrapped run, for the panel (none recorded: `None`).
#[tauri::command]
pub async fn last_wrapped_run() -> Result<Option<MemorySnapshot>, AppError> {
    blocking(|| {
        let ledger = jobs::open_ledger()?;
        let t = live_memory::configured_thresholds();
        Ok(headroom_core::evidence::newest_user_run(&ledger)?.map(|o| wrapped_snapshot(&o, &t)))
    })
    .await
}

/// Starts the memory job `order` (refused while one runs); `on_update` receives the whole
/// snapshot at every change; returns the first.
async fn start<R: Runtime>(
    app: AppHandle<R>,
    order: MemoryOrder,
    on_update: Channel<MemorySnapshot>,
) -> Result<MemorySnapshot, AppError> {
    if crate::relay::external() {
        return crate::mirror::start(
            app,
            ToTray::Memory(order),
            Some(on_update),
            |s: &MemorySnapshot| {
                s.running
                    .then(|| format!("a memory run is already going ({}); stop it first", s.title))
            },
        )
        .await;
    }
    let prepared = blocking(move || Ok(live_memory::prepare(order)?)).await?;
    let handle = app.clone();
    let first = app
        .state::<MemorySlot>()
        .launch(prepared, move |s, change| {
            if let Some((head, body)) = live_memory::notice(s, change) {
                crate::notify::send(&handle, crate::notify::Kind::Leak, &head, &body);
            }
            if change == Change::Ended {
                // For a popover made in a new process.
                headroom_core::kept::keep("memory", s);
            }
            if change != Change::Step {
                crate::tray::tell(&handle, TrayPart::Memory(Some(MemoryLine::of(s))));
            }
            let _ = on_update.send(s.clone());
        })?;
    crate::tray::tell(&app, TrayPart::Memory(Some(MemoryLine::of(&first))));
    Ok(first)
}

/// Trains one batch for several epochs in the worker and judges memory growth.
#[tauri::command]
pub async fn start_epochs(
    app: AppHandle,
    form: EpochsForm,
    on_update: Channel<MemorySnapshot>,
) -> Result<MemorySnapshot, AppError> {
    // Checked here first: a bad value is said at once, wherever the job would run.
    live_memory::epochs_request(&form, &live_memory::configured_thresholds())?;
    start(app, MemoryOrder::Epochs { form }, on_update).await
}

/// "Watch my training" (and "Check numerics", with `numerics` the compared side's dtype: the
/// model against a CPU copy at its first iteration, the command stopped after three): runs the
/// project's command in its folder with its Python, observed from inside, and shows memory per
/// epoch live with the leak verdict; [`stop_memory`] stops the command (its process group) and
/// keeps what was measured. `{batch}` is `batch`, else the batch the project's newest sweep
/// chose; `{device}` is `device`, else this machine's accelerator (the CPU where there is
/// none). `release` (`gc`, `empty-cache`, `both`) releases memory at every epoch end, as
/// `headroom run --release` does; `profile_window` profiles that many iterations after the
/// warm-up, as `headroom run --profile-window` does.
#[tauri::command]
#[allow(clippy::too_many_arguments)]
pub async fn watch_project(
    app: AppHandle,
    name: String,
    batch: Option<u32>,
    device: Option<String>,
    release: Option<String>,
    profile_window: Option<u32>,
    numerics: Option<String>,
    on_update: Channel<MemorySnapshot>,
) -> Result<MemorySnapshot, AppError> {
    let order = MemoryOrder::Project {
        name,
        batch,
        device,
        release,
        profile_window,
        numerics,
    };
    start(app, order, on_update).await
}

/// Python processes (and the biggest ones otherwise) that may be watched, largest first.
#[tauri::command]
pub async fn list_processes() -> Result<Vec<ProcessInfo>, AppError> {
    tauri::async_runtime::spawn_blocking(processes)
        .await
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))
}

fn processes() -> Vec<ProcessInfo> {
    let me = std::process::id();
    let mut out: Vec<ProcessInfo> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| *pid != me)
                .filter_map(|pid| {
                    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                    let command = String::from_utf8_lossy(&raw)
                        .replace('\0', " ")
                        .trim()
                        .to_owned();
                    if !command.contains("python") {
                        return None;
                    }
                    Some(ProcessInfo {
                        pid,
                        command,
                        rss_bytes: headroom_probe::sysmem::pid_rss(pid)?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by_key(|p| std::cmp::Reverse(p.rss_bytes));
    out.truncate(20);
    out
}

/// Watches process `pid` until it exits or [`stop_memory`]; flags it once its tree memory has
/// grown past the leak threshold since watching began.
#[tauri::command]
pub async fn start_watch(
    app: AppHandle,
    pid: u32,
    on_update: Channel<MemorySnapshot>,
) -> Result<MemorySnapshot, AppError> {
    start(app, MemoryOrder::Watch { pid }, on_update).await
}

/// Stops the running epochs run, project run or watch.
#[tauri::command]
pub async fn stop_memory(app: AppHandle) -> Result<bool, AppError> {
    if crate::relay::external() {
        let running = app
            .state::<TrayMemory>()
            .latest()
            .is_some_and(|s| s.running);
        crate::relay::to_tray(&ToTray::StopMemory);
        return Ok(running);
    }
    Ok(app.state::<MemorySlot>().stop())
}

/// The current (or last) memory job: this process's, the tray's, or the last one kept.
#[tauri::command]
pub async fn memory_snapshot(app: AppHandle) -> Result<Option<MemorySnapshot>, AppError> {
    let here = if crate::relay::external() {
        app.state::<TrayMemory>().latest()
    } else {
        app.state::<MemorySlot>().snapshot()
    };
    Ok(here.or_else(|| headroom_core::kept::kept("memory")))
}
