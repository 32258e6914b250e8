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
/// training started, detached, on the first host its migration reached
/// ([`headroom_core::jobs::remote_runs::continue_chosen`]); where none did, the popover opens on
/// the Remote panel, whose wizard shows the first step missing. (Under `headroom-tray` the tray
/// does this itself; this is the app run alone.)
pub fn continue_on_remote<R: tauri::Runtime>(app: &tauri::AppHandle<R>) {
    use tauri::Manager;
    let app = app.clone();
    let counted = Counted::new();
    std::thread::spawn(move || {
        let _counted = counted;
        let project = app.state::<crate::overview::OverviewSlot>().project();
        match headroom_core::jobs::remote_runs::continue_chosen(project.as_deref()) {
            Ok((title, body)) => {
                crate::notify::send(&app, crate::notify::Kind::Verdict, &title, &body);
            }
            Err(why) => {
                eprintln!("headroom-app: continue on the remote host: {why}");
                crate::show_popover_on(&app, "remote");
            }
        }
    });
}
