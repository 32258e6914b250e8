//! The Sweep panel's sweeps in the app: where they run and how their snapshots reach the panel.
//! The snapshot, the order and the slot are the core's ([`headroom_core::jobs::live`]). Under
//! `headroom-tray` (this process being its popover's) the tray runs the sweep — it goes on when
//! the popover is closed and this process has ended — and this process mirrors it
//! ([`TraySweep`]) from the tray's `sweep` lines; run alone, the app runs it in its own slot.

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use headroom_core::jobs::live::{self, Change, SweepOrder};
use headroom_core::jobs::sweep::JobError;
use headroom_core::menubar::{SweepLine, ToTray};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime};

use crate::error::{AppError, ErrorCode};
use crate::tray::TrayPart;
use crate::util::{blocking, lock};

pub use headroom_core::jobs::live::{SweepSlot, SweepSnapshot, CHART};

/// How long a start waits for the tray's answer (it checks the order first: the project, the
/// host, the config).
const TRAY_ANSWER: Duration = Duration::from_secs(30);

/// The tray's answer to a start: the first snapshot, or why not.
type Answer = Result<Box<SweepSnapshot>, JobError>;

/// The sweep the tray runs, as this popover's process last heard of it, and where its changes
/// go: the panel's listener of the sweep this page started, and the start waiting for its
/// answer.
#[derive(Default)]
pub struct TraySweep {
    latest: Mutex<Option<SweepSnapshot>>,
    listener: Mutex<Option<Channel<SweepSnapshot>>>,
    answer: Mutex<Option<mpsc::Sender<Answer>>>,
}

impl TraySweep {
    /// A `sweep` line: the tray's sweep as it stands.
    pub fn heard(&self, s: SweepSnapshot) {
        if let Some(l) = lock(&self.listener).as_ref() {
            let _ = l.send(s.clone());
        }
        *lock(&self.latest) = Some(s);
    }

    /// A `sweep-started` line: the answer to this process's order.
    pub fn answered(&self, r: Answer) {
        if let Ok(s) = &r {
            *lock(&self.latest) = Some((**s).clone());
        }
        if let Some(tx) = lock(&self.answer).take() {
            let _ = tx.send(r);
        }
    }

    /// The tray's sweep, if this process heard of one.
    pub fn latest(&self) -> Option<SweepSnapshot> {
        lock(&self.latest).clone()
    }
}

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
    if let Some(s) = app.state::<TraySweep>().latest().filter(|s| s.running) {
        return Err(AppError::new(
            ErrorCode::Busy,
            format!(
                "a sweep is already running ({}); cancel it or wait for it to finish",
                s.workload
            ),
        ));
    }
    let (tx, rx) = mpsc::channel();
    {
        let tray = app.state::<TraySweep>();
        *lock(&tray.answer) = Some(tx);
        *lock(&tray.listener) = Some(on_update);
    }
    crate::relay::to_tray(&ToTray::Sweep(order));
    let answer = blocking(move || {
        rx.recv_timeout(TRAY_ANSWER).map_err(|_| {
            AppError::new(
                ErrorCode::Internal,
                "Headroom's tray process did not answer the sweep's start; quit Headroom from its menu and start it again",
            )
        })
    })
    .await?;
    Ok(*answer?)
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
