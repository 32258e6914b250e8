//! The Overview: the decision table, recomputed in the background every few seconds from a
//! fresh contention sample and the ledger, pushed to the UI, painted on the tray, and told as a
//! notification when the verdict changes (e.g. a call starts eating the memory training needs).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use headroom_decide::{Column, Decision, Rule};
use headroom_probe::contention::{ContentionReport, Sampler};
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime, State};

use crate::error::{AppError, ErrorCode};
use crate::notify::Kind;
use crate::tray::{DecisionLine, TrayPart};
use crate::util::lock;

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
        *lock(&self.project) = project;
        *lock(&self.latest) = None;
        crate::tray::tell(app, TrayPart::Decision(None));
    }

    pub(crate) fn project(&self) -> Option<String> {
        lock(&self.project).clone()
    }
}

/// What to tell the user when the decision moves from `prev` to `next`: a new verdict, or
/// contention newly raised. Nothing on the first sample unless contention is already raised.
/// A notice that points at the remote host carries the button that opens the Remote panel.
pub fn change_notice(prev: Option<&Decision>, next: &Decision) -> Option<(Kind, String, String)> {
    let contention =
        next.fired(Rule::Contention) && !prev.is_some_and(|p| p.fired(Rule::Contention));
    if contention {
        let why = next
            .reasons
            .iter()
            .find(|r| r.rule == Rule::Contention)
            .map_or_else(String::new, |r| r.text.clone());
        return Some((
            Kind::Contention,
            "Headroom: memory contention — move the run to the remote host".into(),
            format!("{why}. Open Headroom for the decision table."),
        ));
    }
    let prev = prev?;
    (prev.verdict != next.verdict).then(|| {
        let to = next.verdict.map_or("fix first", |c| c.label());
        let kind = if next.verdict == Some(Column::Remote) {
            Kind::Contention
        } else {
            Kind::Verdict
        };
        (kind, format!("Headroom: now {to}"), next.headline.clone())
    })
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
                crate::notify::send(&app, kind, &title, &body);
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

#[cfg(test)]
mod tests {
    use headroom_decide::{decide, Facts};
    use headroom_store::config::DecideThresholds;

    use super::*;

    fn decided(contention: &[&str], parity: bool) -> Decision {
        let f = Facts {
            contention: contention.iter().map(|s| (*s).to_owned()).collect(),
            cuda_parity_required: parity,
            ..Facts::default()
        };
        decide(&f, &DecideThresholds::default())
    }

    #[test]
    fn a_notice_when_contention_starts_or_the_verdict_moves_not_otherwise() {
        let calm = decided(&[], false);
        assert_eq!(calm.verdict, Some(Column::Cpu));
        assert_eq!(change_notice(None, &calm), None, "no news at start");
        assert_eq!(change_notice(Some(&calm), &calm), None);
        let squeezed = decided(
            &["conferencing and IDEs hold 10.0 GiB (31 % of 32.0 GiB RAM; threshold 25 %)"],
            false,
        );
        let (kind, title, body) = change_notice(Some(&calm), &squeezed).expect("contention starts");
        assert_eq!(kind, Kind::Contention, "carries the Remote panel button");
        assert!(title.contains("memory contention"), "{title}");
        assert!(body.contains("31 % of 32.0 GiB"), "{body}");
        assert!(
            change_notice(None, &squeezed).is_some(),
            "raised at start is news"
        );
        assert_eq!(change_notice(Some(&squeezed), &squeezed), None, "said once");
        let (kind, title, body) = change_notice(Some(&squeezed), &calm).expect("back to the CPU");
        assert_eq!(kind, Kind::Verdict);
        assert_eq!(title, "Headroom: now CPU");
        assert!(body.starts_with("CPU"), "{body}");
        let parity = decided(&[], true);
        let (kind, title, _) = change_notice(Some(&calm), &parity).expect("moves remote");
        assert_eq!(kind, Kind::Contention);
        assert_eq!(title, "Headroom: now remote");
    }
}
