//! The Overview: the decision table, recomputed in the background every few seconds from a
//! fresh contention sample and the ledger, pushed to the UI, painted on the tray, and told as a
//! notification when the verdict changes (e.g. a call starts eating the memory training needs).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use headroom_decide::Decision;
use headroom_probe::contention::{ContentionReport, Sampler};
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime, State};

use crate::error::{AppError, ErrorCode};
use crate::tray::{DecisionLine, TrayPart};
use crate::util::lock;
use headroom_core::menubar::change_notice;

/// Event carrying each new [`OverviewSnapshot`] to the UI.
pub const OVERVIEW_EVENT: &str = "headroom://overview";

/// One recomputation: the decision, the contention sample it used, and any problem met.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct OverviewSnapshot {
    /// The project whose runs judged it (none: every run of this machine).
    pub project: Option<String>,
    pub decision: Decision,
    pub contention: ContentionReport,
    pub taken_at: String,
    /// The configuration could not be read (the defaults were used) or the ledger failed.
    pub problem: Option<String>,
    /// Seconds until the next sample.
    pub interval_s: u64,
}

/// The Overview's slot: the latest snapshot and the project it is judged from.
#[derive(Debug, Default)]
pub struct OverviewSlot {
    latest: Mutex<Option<Arc<OverviewSnapshot>>>,
    project: Mutex<Option<String>>,
}

impl OverviewSlot {
    /// Judges the Overview from `project`'s runs from now on (none: every run). The old
    /// snapshot is dropped — it must not be shown as if it were the new project's — and the tray
    /// forgets its decision until the next one.
    pub fn choose<R: Runtime>(&self, app: &AppHandle<R>, project: Option<String>) {
        headroom_core::project::remember_chosen(project.as_deref());
        *lock(&self.project) = project.clone();
        *lock(&self.latest) = None;
        crate::relay::to_tray(&headroom_core::menubar::ToTray::Project(project));
        crate::tray::tell(app, TrayPart::Decision(None));
    }

    /// Judged from the project chosen last time Headroom ran (the app run alone).
    pub fn remembered() -> Self {
        Self {
            project: Mutex::new(headroom_core::project::chosen()),
            ..Self::default()
        }
    }

    /// Starts judged from `project` (the tray process's choice, for a new popover process):
    /// nothing is told, the tray knows it.
    pub fn start_with(&self, project: Option<String>) {
        *lock(&self.project) = project;
    }

    pub(crate) fn project(&self) -> Option<String> {
        lock(&self.project).clone()
    }
}

/// One recomputation from the ledger, the configuration and `sampler`.
fn compute(sampler: &mut Sampler, project: Option<&str>) -> OverviewSnapshot {
    let (now, problem) = headroom_core::jobs::decide_now::now(sampler, project);
    OverviewSnapshot {
        project: project.map(str::to_owned),
        decision: now.decision,
        contention: now.contention,
        taken_at: headroom_model::time::now_rfc3339(),
        problem: problem.map(|e| e.to_string()),
        interval_s: now.interval_s,
    }
}

/// Starts the background loop; it lives as long as the app.
pub fn start<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    std::thread::spawn(move || {
        let mut sampler = Sampler::new();
        let mut ticks: u32 = 0;
        loop {
            let slot = app.state::<OverviewSlot>();
            let project = slot.project();
            // Closed, the popover shows nothing: the process list is read only when it could
            // raise contention (or once a minute), most of an idle tick's cost (bench/README.md).
            sampler.set_light(!popover_visible(&app));
            let snap = compute(&mut sampler, project.as_deref());
            let prev = lock(&slot.latest).replace(Arc::new(snap.clone()));
            if let Some((kind, title, body)) =
                change_notice(prev.as_ref().map(|p| &p.decision), &snap.decision)
            {
                // Started by `headroom-tray`, which notifies from its own loop.
                if !crate::relay::external() {
                    crate::notify::send(&app, kind, &title, &body);
                }
            }
            // A hidden popover is not redrawn (its WebKit process stays asleep: about half the
            // app's idle CPU, bench/README.md); `show_popover` sends it the latest on showing.
            if popover_visible(&app) {
                let _ = app.emit(OVERVIEW_EVENT, &snap);
            }
            // The tray hears only of a decision that changed.
            if prev.as_ref().map(|p| DecisionLine::of(&p.decision))
                != Some(DecisionLine::of(&snap.decision))
            {
                let line = DecisionLine::of(&snap.decision);
                crate::tray::tell(&app, TrayPart::Decision(Some(line)));
            }
            // glibc keeps freed heap pages (start-up's, each tick's) in its arenas; hand them
            // back once a minute while the app idles in the menu bar (bench/README.md: about
            // 2 MiB).
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            if ticks.is_multiple_of(12) && !popover_visible(&app) {
                // SAFETY: malloc_trim only releases free memory at the top of the heaps.
                unsafe {
                    libc::malloc_trim(0);
                }
            }
            ticks = ticks.wrapping_add(1);
            std::thread::sleep(Duration::from_secs(snap.interval_s.max(1)));
        }
    });
}

fn popover_visible<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.get_webview_window(crate::POPOVER)
        .is_some_and(|w| w.is_visible().unwrap_or(true))
}

/// Sends the latest overview to the popover (when the loop has one).
pub fn send_latest<R: Runtime>(app: &AppHandle<R>) {
    let latest = lock(&app.state::<OverviewSlot>().latest).clone();
    if let Some(s) = latest {
        let _ = app.emit(OVERVIEW_EVENT, &*s);
    }
}

/// The latest overview; computed now when the loop has not produced one yet.
#[tauri::command]
pub async fn overview(state: State<'_, OverviewSlot>) -> Result<OverviewSnapshot, AppError> {
    if let Some(s) = lock(&state.latest).as_ref() {
        return Ok((**s).clone());
    }
    let project = state.project();
    tauri::async_runtime::spawn_blocking(move || compute(&mut Sampler::new(), project.as_deref()))
        .await
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))
}
