//! Desktop notifications: the one place the app speaks up while its popover is hidden. Each one
//! is also written to stderr, so a notification that the desktop cannot show is not lost.

use tauri::{AppHandle, Emitter, Runtime};
use tauri_plugin_notification::{Action, ActionType, NotificationExt};

pub use headroom_core::menubar::{panel_for, Kind, CONTINUE_REMOTE, OPEN_REMOTE};

/// The action type of contention notifications (their buttons).
const CONTENTION_ACTIONS: &str = "headroom-contention";
/// The app event that button raises (heard by `handoff`, which knows the remote hosts).
pub const CONTINUE_EVENT: &str = "headroom://continue-remote";

/// Registers the notification buttons and what a click on them does: show the popover on the
/// panel the notification is about. Call once at start, before any notification is shown (a
/// notification shown before a handler exists reports no clicks).
pub fn init<R: Runtime>(app: &AppHandle<R>) {
    let n = app.notification();
    let types = vec![ActionType::builder(CONTENTION_ACTIONS)
        .actions(vec![
            Action::builder(CONTINUE_REMOTE, "Continue on the remote host").build(),
            Action::builder(OPEN_REMOTE, "Open the Remote panel").build(),
        ])
        .build()];
    if let Err(e) = n.register_action_types(types) {
        eprintln!("headroom-app: notification buttons unavailable: {e}");
    }
    let handle = app.clone();
    let _ = n.on_action(move |performed| {
        if performed.action_id() == CONTINUE_REMOTE {
            let _ = handle.emit_to(tauri::EventTarget::App, CONTINUE_EVENT, ());
            return;
        }
        let id = performed.notification().map(|n| n.id());
        let panel = panel_for(performed.action_id(), id);
        eprintln!(
            "headroom-app: notification action {:?} on {id:?}: opening {panel}",
            performed.action_id()
        );
        crate::show_popover_on(&handle, panel);
    });
}

/// Shows `title` with `body` through the OS notification centre (D-Bus on Linux), with the
/// buttons of `kind`.
pub fn send<R: Runtime>(app: &AppHandle<R>, kind: Kind, title: &str, body: &str) {
    eprintln!("headroom-app: notification: {title}: {body}");
    let mut builder = app
        .notification()
        .builder()
        .id(kind.id())
        .title(title)
        .body(body);
    if kind == Kind::Contention {
        builder = builder.action_type_id(CONTENTION_ACTIONS);
    }
    if let Err(e) = builder.show() {
        eprintln!("headroom-app: the notification could not be shown: {e}");
    }
}
