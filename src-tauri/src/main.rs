//! `headroom-app`: Headroom in the menu bar. A tray icon whose colour is the readiness verdict, a
//! popover with the Overview, Readiness, Sweep, Memory, Ledger and Remote panels, and thin async commands over
//! `headroom_core`; sweeps and libtorch run in `headroom worker` child processes, never here.
//!
//! `headroom-app --open` (or `HEADROOM_APP_OPEN=1`) shows the popover at start, for machines
//! without a tray host (Xvfb in the end-to-end tests, some Linux desktops).

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod about;
#[cfg(test)]
mod audit;
mod commands;
mod contract;
mod error;
#[cfg(test)]
mod ipc;
mod ledger;
mod memory;
mod notify;
mod overview;
mod projects;
mod remote;
mod settings;
mod single;
mod state;
#[cfg(test)]
mod surface;
mod tray;

use tauri::{AppHandle, Manager, Rect, Runtime, WindowEvent};

/// The popover window's label.
pub const POPOVER: &str = "popover";
/// Event telling the UI which panel to show (`readiness`, `sweep`).
pub const NAVIGATE_EVENT: &str = "headroom://navigate";

/// Shows the popover, under the tray icon when its place is known.
pub fn show_popover<R: Runtime>(app: &AppHandle<R>, near: Option<Rect>) {
    let Some(w) = app.get_webview_window(POPOVER) else {
        return;
    };
    if let Some(rect) = near {
        let scale = w.scale_factor().unwrap_or(1.0);
        let pos = rect.position.to_physical::<f64>(scale);
        let size = rect.size.to_physical::<f64>(scale);
        let width = w.outer_size().map(|s| f64::from(s.width)).unwrap_or(400.0);
        let x = (pos.x + size.width / 2.0 - width / 2.0).max(0.0);
        let y = pos.y + size.height;
        let _ = w.set_position(tauri::PhysicalPosition::new(x, y));
    }
    let _ = w.show();
    let _ = w.set_focus();
}

fn main() {
    let open = std::env::args().any(|a| a == "--open")
        || std::env::var_os("HEADROOM_APP_OPEN").is_some_and(|v| v == "1");
    let lock = match single::acquire() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("headroom-app: {e}");
            return;
        }
    };
    eprintln!("headroom-app: workers from {}", commands::describe_worker());
    let result = tauri::Builder::default()
        .manage(state::AppState::default())
        .plugin(tauri_plugin_notification::init())
        .invoke_handler(contract::handler())
        .setup(move |app| {
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            tray::build(app.handle())?;
            notify::init(app.handle());
            overview::start(app.handle());
            if open {
                show_popover(app.handle(), None);
            }
            Ok(())
        })
        .on_window_event(|window, event| {
            // Closing the popover hides it; a running sweep goes on and the tray shows it.
            if let WindowEvent::CloseRequested { api, .. } = event {
                api.prevent_close();
                let _ = window.hide();
            }
        })
        .run(tauri::generate_context!());
    drop(lock);
    if let Err(e) = result {
        eprintln!("headroom-app: {e}");
        std::process::exit(1);
    }
}
