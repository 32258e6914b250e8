//! The Sweep panel's sweeps in the app: where they run and how their snapshots reach the panel.
//! The snapshot, the order and the slot are the core's ([`headroom_core::jobs::live`]). Under
//! `headroom-tray` (this process being its popover's) the tray runs the sweep — it goes on when
//! the popover is closed and this process has ended — and this process mirrors it
//! ([`TraySweep`], [`crate::mirror`]) from the tray's `sweep` lines; run alone, the app runs it
//! in its own slot.

use headroom_core::jobs::live::{self, Change, SweepOrder};
use headroom_core::jobs::sweep::JobError;
use headroom_core::menubar::{SweepLine, ToTray};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime};

use crate::error::AppError;
use crate::tray::TrayPart;
use crate::util::blocking;

pub use headroom_core::jobs::live::{SweepSlot, SweepSnapshot, CHART};

/// The tray's sweep, as this popover's process hears of it.
pub type TraySweep = crate::mirror::Mirror<SweepSnapshot>;

impl From<JobError> for AppError {
    fn from(e: JobError) -> Self {
        Self::new(e.code, e.message)
    }
}

/// Starts the sweep `order` (refused while one runs); `on_update` receives the whole snapshot
/// at every change; returns the first.
pub async fn start<R: Runtime>(
    app: AppHandle<R>,
    order: SweepOrder,
    on_update: Channel<SweepSnapshot>,
) -> Result<SweepSnapshot, AppError> {
    if crate::relay::external() {
        return start_in_tray(app, order, on_update).await;
    }
    let prepared = blocking(move || Ok(live::prepare(&order)?)).await?;
    let handle = app.clone();
    let first = app
        .state::<SweepSlot>()
        .launch(prepared, move |s, change| {
            let _ = on_update.send(s.clone());
            if change == Change::Ended {
                // For a popover made in a new process.
                headroom_core::kept::keep("sweep", s);
            }
            // The tray moves with points, not with every step.
            if change != Change::Step {
                crate::tray::tell(&handle, TrayPart::Sweep(Some(SweepLine::of(s))));
            }
        })?;
    crate::tray::tell(&app, TrayPart::Sweep(Some(SweepLine::of(&first))));
    Ok(first)
}

/// [`start`] by the tray process: the order goes to it and its answer comes back as a line.
async fn start_in_tray<R: Runtime>(
    app: AppHandle<R>,
    order: SweepOrder,
    on_update: Channel<SweepSnapshot>,
) -> Result<SweepSnapshot, AppError> {
    crate::mirror::start(
        app,
        ToTray::Sweep(order),
        Some(on_update),
        |s: &SweepSnapshot| {
            s.running.then(|| {
                format!(
                    "a sweep is already running ({}); cancel it or wait for it to finish",
                    s.workload
                )
            })
        },
    )
    .await
}

/// Cancels the running sweep; false when none runs.
pub fn cancel<R: Runtime>(app: &AppHandle<R>) -> bool {
    if crate::relay::external() {
        let running = app.state::<TraySweep>().latest().is_some_and(|s| s.running);
        crate::relay::to_tray(&ToTray::CancelSweep);
        return running;
    }
    app.state::<SweepSlot>().cancel()
}

/// The current (or last) sweep: this process's, the tray's, or the last one kept.
pub fn snapshot<R: Runtime>(app: &AppHandle<R>) -> Option<SweepSnapshot> {
    let here = if crate::relay::external() {
        app.state::<TraySweep>().latest()
    } else {
        app.state::<SweepSlot>().snapshot()
    };
    here.or_else(|| headroom_core::kept::kept("sweep"))
}
