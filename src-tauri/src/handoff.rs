//! The hand-off in one click: the contention notification's "Continue on the remote host"
//! (heard as an app event, so the notifications need not know the remote hosts) starts the
//! chosen project's training on the remote host, detached.

use std::sync::atomic::{AtomicUsize, Ordering};

use tauri::{AppHandle, Listener, Runtime};

/// Hand-offs under way: the popover's process lives on for them without a window.
static UNDER_WAY: AtomicUsize = AtomicUsize::new(0);

/// Whether a hand-off is under way.
pub fn under_way() -> bool {
    UNDER_WAY.load(Ordering::SeqCst) > 0
}

/// Counts one hand-off while it lives.
struct Counted;

impl Counted {
    fn new() -> Self {
        UNDER_WAY.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        UNDER_WAY.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Listens for the notification's button (call once at start).
pub fn listen<R: Runtime>(app: &AppHandle<R>) {
    let handle = app.clone();
    app.listen(crate::notify::CONTINUE_EVENT, move |_| {
        continue_on_remote(&handle);
    });
}

/// "Continue on the remote host" (the contention notification's button): the chosen project's
/// training started, detached, on the first host its migration reached; where none did, the
/// popover opens on the Remote panel, whose wizard shows the first step missing.
pub fn continue_on_remote<R: tauri::Runtime>(app: &tauri::AppHandle<R>) {
    use headroom_core::jobs::remote_runs::ContinueOn;
    use tauri::Manager;
    let app = app.clone();
    let counted = Counted::new();
    std::thread::spawn(move || {
        let _counted = counted;
        let project = app.state::<crate::overview::OverviewSlot>().project();
        let open_wizard = |why: &str| {
            eprintln!("headroom-app: continue on the remote host: {why}");
            crate::show_popover_on(&app, "remote");
        };
        let Some(project) = project else {
            return open_wizard("no project chosen");
        };
        let hosts = match headroom_core::remote::Hosts::load() {
            Ok(h) => h.list().cloned().collect::<Vec<_>>(),
            Err(e) => return open_wizard(&e.to_string()),
        };
        let found = headroom_core::jobs::remote_runs::host_to_continue_on(&hosts, &|name| {
            headroom_core::jobs::migrate::Migration::load_or_new(name, &project, None).ok()
        });
        let p = match found {
            ContinueOn::Ready(p) => *p,
            ContinueOn::NotYet { host, why } => return open_wizard(&format!("{host}: {why}")),
            ContinueOn::Nowhere => return open_wizard("no host has the project yet"),
        };
        let ledger = headroom_core::jobs::open_ledger().ok();
        let started = headroom_core::jobs::remote_runs::continue_project(
            &p,
            &project,
            ledger.as_ref(),
            crate::remote::RUNS_TIMEOUT,
        );
        match started {
            Ok((s, batch)) => {
                let run = headroom_core::jobs::remote_runs::just_started(&s.meta);
                let row = crate::remote::mirrored(
                    None::<&tauri::AppHandle<R>>,
                    &p.name,
                    std::slice::from_ref(&run),
                )
                .first()
                .and_then(|r| r.ledger_run_id);
                crate::notify::send(
                    &app,
                    crate::notify::Kind::Verdict,
                    &format!("Headroom: {project} continues on {}", p.name),
                    &format!(
                        "`{}` runs there on {}{}, detached: it goes on if this Mac sleeps (run {}{})",
                        s.argv.join(" "),
                        s.device,
                        batch.map_or_else(String::new, |b| format!(" at {b}")),
                        s.meta.id,
                        row.map_or_else(String::new, |r| format!(", run {r} here"))
                    ),
                );
            }
            Err(e) => open_wizard(&format!("{}: {e}", p.name)),
        }
    });
}
