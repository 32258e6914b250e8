//! `headroom-app`: Headroom in the menu bar. A tray icon whose colour is the readiness verdict, a
//! popover with the Overview, Readiness, Sweep, Memory, Ledger and Remote panels, and thin async commands over
//! `headroom_core`; sweeps and libtorch run in `headroom worker` child processes, never here.
//!
//! `headroom-app --open` (or `HEADROOM_APP_OPEN=1`) shows the popover at start, for machines
//! without a tray host (Xvfb in the end-to-end tests, some Linux desktops). `headroom-app
//! --popover` is the popover's process started by `headroom-tray` (see [`linked`]): no tray of
//! its own, its orders on standard input, ended when closed and idle. Started plain (no
//! argument: the desktop entry, the login item), it becomes `headroom-tray` where that binary is
//! beside it (`HEADROOM_APP_ALONE=1`: the whole app in one process).

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod about;
#[cfg(test)]
mod audit;
mod commands;
mod contract;
mod desktop;
mod error;
mod handoff;
#[cfg(test)]
mod ipc;
mod ledger;
mod linked;
mod login_item;
mod memory;
mod mirror;
mod notify;
mod overview;
mod popover;
mod prewarm;
mod projects;
mod relay;
mod remote;
mod settings;
mod single;
#[cfg(test)]
mod surface;
mod sweep;
mod tray;
mod util;

use tauri::{AppHandle, Manager, Runtime, WindowEvent};

/// The popover window's label.
pub const POPOVER: &str = "popover";
/// Event telling the UI which panel to show (`readiness`, `sweep`).
pub const NAVIGATE_EVENT: &str = "headroom://navigate";

/// Shows the popover and gives it the focus, under the tray icon where the icon has said where
/// it is.
pub fn show_popover<R: Runtime>(app: &AppHandle<R>) {
    let Some(w) = popover::window(app, None) else {
        return;
    };
    popover::shown(app);
    desktop::place(&w);
    if w.is_minimized().unwrap_or(false) {
        let _ = w.unminimize();
    }
    let _ = w.show();
    let _ = w.set_focus();
    // The overview loop sends nothing to a hidden popover: it gets the latest on showing.
    overview::send_latest(app);
}

/// Shows the popover on `panel` (`readiness`, `sweep`, `remote`): a popover made now opens
/// there, one that was kept is told to go there.
pub fn show_popover_on<R: Runtime>(app: &AppHandle<R>, panel: &str) {
    use tauri::Emitter;
    let kept = app.get_webview_window(POPOVER).is_some();
    if !kept && popover::window(app, Some(panel)).is_none() {
        return;
    }
    show_popover(app);
    if kept {
        let _ = app.emit(NAVIGATE_EVENT, panel);
    }
}

/// The environment WebKitGTK is started with: each default the user has not set (`get` finds it
/// unset). `WEBKIT_DISABLE_DMABUF_RENDERER`: WebKitGTK 2.42+ renders through DMA-BUF buffers it
/// sets up GBM and EGL for in each web process it starts; without it a popover's first open
/// loaded its page about 65 ms sooner (medians 327–333 against 375–398 ms, WebKitGTK 2.50.6 under
/// Xvfb, `bench/README.md`) and an open popover held 69 MiB less; a small panel of charts does not
/// need it. It is also the usual cure for a blank WebView on some NVIDIA drivers.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn webkit_defaults(
    get: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<(&'static str, &'static str)> {
    [("WEBKIT_DISABLE_DMABUF_RENDERER", "1")]
        .into_iter()
        .filter(|(k, _)| get(k).is_none())
        .collect()
}

fn main() {
    // Before any thread: the process's environment is set once, here.
    #[cfg(target_os = "linux")]
    for (k, v) in webkit_defaults(|k| std::env::var_os(k)) {
        std::env::set_var(k, v);
    }
    prewarm::run_if_asked();
    let open = std::env::args().any(|a| a == "--open")
        || std::env::var_os("HEADROOM_APP_OPEN").is_some_and(|v| v == "1");
    let linked = std::env::args().any(|a| a == "--popover");
    if !linked {
        linked::become_the_tray_when_started_plain();
    }
    eprintln!("headroom-app: workers from {}", commands::describe_worker());
    // A second start on the same Headroom folder hands over to the first in the single-instance
    // plugin (registered first) and exits there. The folder's lock below stays as the guard
    // where that plugin cannot see the first (no D-Bus session): two apps must never share one
    // ledger and configuration.
    let result = desktop::plugins(tauri::Builder::default())
        // Each panel owns its slot; the tray keeps its own facts (told through its event).
        .manage(commands::ReadinessSlot::default())
        .manage(sweep::SweepSlot::default())
        .manage(sweep::TraySweep::default())
        .manage(memory::TrayMemory::default())
        .manage(remote::TrayScreen::default())
        .manage(memory::MemorySlot::default())
        .manage(overview::OverviewSlot::remembered())
        .manage(remote::VncSlot::default())
        .manage(desktop::DesktopState::default())
        .manage(popover::Hides::default())
        .plugin(tauri_plugin_notification::init())
        .invoke_handler(contract::handler())
        .setup(move |app| {
            let lock = match single::acquire() {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("headroom-app: {e}");
                    std::process::exit(0);
                }
            };
            app.manage(single::Held { _lock: lock });
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            if linked {
                linked::start(app.handle());
            } else {
                tray::build(app.handle())?;
            }
            notify::init(app.handle());
            overview::start(app.handle());
            if !linked {
                // Under the tray, the tray follows them (it runs while the popover is closed).
                remote::follow_remote_runs(app.handle());
            }
            handoff::listen(app.handle());
            desktop::apply_config(app.handle());
            if open {
                show_popover(app.handle());
            }
            Ok(())
        })
        .on_page_load(|_, page| {
            // The tray process (and its end-to-end test) times an open to the page loaded.
            if relay::external() && page.event() == tauri::webview::PageLoadEvent::Finished {
                eprintln!("headroom-app: page loaded");
                relay::to_tray(&headroom_core::menubar::ToTray::Loaded);
            }
        })
        .on_window_event(|window, event| {
            // Closing the popover hides it (its webview goes a minute later); a running sweep
            // goes on and the tray shows it.
            if let WindowEvent::CloseRequested { api, .. } = event {
                api.prevent_close();
                popover::hide(window.app_handle());
            }
            // Minimised (a window manager's key: the popover has no button for it), the
            // popover is closed: hidden, and its webview dropped after the keep time. On Linux
            // the minimising reaches here as a resize (tao tells a change of the iconified
            // state so); on macOS, where tao tells no such change, as the loss of focus
            // (compiled, never run). A hidden popover is left alone.
            if let WindowEvent::Resized(_) | WindowEvent::Focused(false) = event {
                if window.label() == POPOVER
                    && window.is_minimized().unwrap_or(false)
                    && popover::showing(window.app_handle())
                {
                    popover::hide(window.app_handle());
                }
            }
        })
        .build(tauri::generate_context!());
    let app = match result {
        Ok(app) => app,
        Err(e) => {
            eprintln!("headroom-app: {e}");
            std::process::exit(1);
        }
    };
    app.run(|_, event| {
        // The popover's window dropped is not the app's end: the tray stays (Quit ends it).
        if let tauri::RunEvent::ExitRequested {
            code: None, api, ..
        } = event
        {
            api.prevent_exit();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::webkit_defaults;

    #[test]
    fn webkit_starts_without_its_dmabuf_renderer_unless_the_user_said_otherwise() {
        assert_eq!(
            webkit_defaults(|_| None),
            [("WEBKIT_DISABLE_DMABUF_RENDERER", "1")]
        );
        // A user's own setting (to turn it back on with 0, say) stands.
        assert!(
            webkit_defaults(|k| (k == "WEBKIT_DISABLE_DMABUF_RENDERER").then(|| "0".into()))
                .is_empty()
        );
    }
}
