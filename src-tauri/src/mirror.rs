//! A job the tray process runs for this popover's process (a sweep, a memory job), as this
//! process hears of it: the tray's `sweep`/`memory` lines update [`Mirror::heard`], and the
//! answer to an order this process gave arrives through [`Mirror::answered`]. The panel's
//! listener (the `Channel` of the start that this page made) gets every change.

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use headroom_core::jobs::sweep::JobError;
use headroom_core::menubar::ToTray;
use serde::Serialize;
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime};

use crate::error::{AppError, ErrorCode};
use crate::util::{blocking, lock};

/// How long a start waits for the tray's answer (it checks the order first: the project, the
/// host, the config, the ledger).
const TRAY_ANSWER: Duration = Duration::from_secs(30);

/// The tray's answer to a start: the first snapshot, or why not.
type Answer<S> = Result<Box<S>, JobError>;

/// The tray's job of one kind, as last heard of, and where its changes go.
pub struct Mirror<S: Clone + Serialize> {
    latest: Mutex<Option<S>>,
    listener: Mutex<Option<Channel<S>>>,
    answer: Mutex<Option<mpsc::Sender<Answer<S>>>>,
}

impl<S: Clone + Serialize> Default for Mirror<S> {
    fn default() -> Self {
        Self {
            latest: Mutex::new(None),
            listener: Mutex::new(None),
            answer: Mutex::new(None),
        }
    }
}

impl<S: Clone + Serialize + Send + 'static> Mirror<S> {
    /// The tray's job as it stands (a `sweep` or `memory` line).
    pub fn heard(&self, s: S) {
        if let Some(l) = lock(&self.listener).as_ref() {
            let _ = l.send(s.clone());
        }
        *lock(&self.latest) = Some(s);
    }

    /// The answer to this process's order (a `…-started` line).
    pub fn answered(&self, r: Answer<S>) {
        if let Ok(s) = &r {
            *lock(&self.latest) = Some((**s).clone());
        }
        if let Some(tx) = lock(&self.answer).take() {
            let _ = tx.send(r);
        }
    }

    /// The tray's job, if this process heard of one.
    pub fn latest(&self) -> Option<S> {
        lock(&self.latest).clone()
    }

    /// Forgets the job heard of (one this process ended).
    pub fn forget(&self) -> Option<S> {
        lock(&self.latest).take()
    }
}

/// Gives the tray `order` (unless `busy` says why not, from the job last heard of) and waits
/// for its answer; the job's changes then go to `on_update` (where there is one).
pub async fn start<R: Runtime, S: Clone + Serialize + Send + Sync + 'static>(
    app: AppHandle<R>,
    order: ToTray,
    on_update: Option<Channel<S>>,
    busy: impl Fn(&S) -> Option<String>,
) -> Result<S, AppError> {
    let (tx, rx) = mpsc::channel();
    {
        let mirror = app.state::<Mirror<S>>();
        if let Some(why) = mirror.latest().as_ref().and_then(busy) {
            return Err(AppError::new(ErrorCode::Busy, why));
        }
        *lock(&mirror.answer) = Some(tx);
        *lock(&mirror.listener) = on_update;
    }
    crate::relay::to_tray(&order);
    let answer = blocking(move || {
        rx.recv_timeout(TRAY_ANSWER).map_err(|_| {
            AppError::new(
                ErrorCode::Internal,
                "Headroom's tray process did not answer; quit Headroom from its menu and start it again",
            )
        })
    })
    .await?;
    Ok(*answer?)
}
