//! What a menu-bar app owes its desktop, through Tauri's own plugins: open at login
//! (macOS: the app registered through `SMAppService`, [`crate::login_item`]; Linux: the
//! `autostart` plugin's `~/.config/autostart/Headroom.desktop`), a
//! global shortcut that opens and closes the popover (`global-shortcut`), one instance that
//! brings the first one's popover forward (`single-instance`), the popover under the tray icon
//! (`positioner`) and the native folder chooser (`dialog`).
//!
//! The `[app]` section of the configuration the CLI reads says what is wanted; [`apply`] makes
//! the desktop match it at start and whenever the Settings panel changes a key, and keeps what
//! happened (the entry's path, a shortcut another app holds) for the panel to show.

use std::sync::Mutex;

use headroom_store::config::AppConfig;
use tauri::{AppHandle, Manager, Runtime};
#[cfg(not(target_os = "macos"))]
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_global_shortcut::{GlobalShortcutExt, ShortcutState};
use tauri_plugin_positioner::{Position, WindowExt};

use crate::error::AppError;
use crate::util::lock;

/// What [`apply`] did, by `SECTION.KEY`, for the Settings panel.
#[derive(Debug, Default)]
pub struct DesktopState {
    /// The shortcut registered now, as written in the configuration.
    shortcut: Mutex<Option<String>>,
    /// Whether the global-shortcut plugin has been added (see [`shortcut_plugin`]).
    shortcut_plugin: std::sync::atomic::AtomicBool,
    notes: Mutex<Vec<(String, String)>>,
}

impl DesktopState {
    /// The note for `key` (`app.open_at_login`, `app.shortcut`), if any.
    pub fn note(&self, key: &str) -> Option<String> {
        lock(&self.notes)
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn set_note(&self, key: &str, note: String) {
        let mut notes = lock(&self.notes);
        notes.retain(|(k, _)| k != key);
        notes.push((key.to_owned(), note));
    }
}

/// The D-Bus name that makes an instance the only one (Linux): one per Headroom folder, so a
/// second start on the same ledger brings the first forward while an isolated folder
/// (`HEADROOM_HOME`, as the tests use) runs its own app. macOS's plugin keys on the app's
/// identifier alone (one socket in /tmp), which is one instance per user there.
pub fn instance_id(identifier: &str, data_dir: &std::path::Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data_dir.hash(&mut h);
    // A D-Bus name's elements are letters, digits, `_` and `-`, none starting with a digit.
    format!("{identifier}.h{:016x}", h.finish())
}

/// Registers the plugins, the single-instance one first so that a second start hands over
/// before it builds anything of its own.
pub fn plugins(builder: tauri::Builder<tauri::Wry>) -> tauri::Builder<tauri::Wry> {
    let mut single = tauri_plugin_single_instance::Builder::new().callback(|app, _argv, _cwd| {
        eprintln!("headroom-app: started again; showing this instance's popover");
        crate::show_popover(app);
    });
    if let Ok(dir) = headroom_store::paths::data_dir() {
        single = single.dbus_id(instance_id("dev.headroom.menubar", &dir));
    }
    let builder = builder
        .plugin(single.build())
        .plugin(tauri_plugin_positioner::init());
    // On macOS the app registers itself as a login item (SMAppService), no plugin.
    #[cfg(not(target_os = "macos"))]
    let builder = builder.plugin(
        tauri_plugin_autostart::Builder::new()
            .app_name("Headroom")
            .build(),
    );
    builder.plugin(tauri_plugin_dialog::init())
}

/// Makes the login entry match `on` and says where it stands, in the Settings panel's words.
#[cfg(target_os = "macos")]
fn login_entry<R: Runtime>(_app: &AppHandle<R>, on: bool) -> String {
    crate::login_item::forget_launch_agent();
    match crate::login_item::set(on) {
        Ok(now) => crate::login_item::words(on, now),
        Err(e) => format!(
            "macOS refused to {} the login item: {e}",
            if on { "add" } else { "remove" }
        ),
    }
}

/// Makes the login entry match `on` and says where it stands, in the Settings panel's words.
#[cfg(not(target_os = "macos"))]
fn login_entry<R: Runtime>(app: &AppHandle<R>, on: bool) -> String {
    let launcher = app.autolaunch();
    let login = if on {
        launcher.enable()
    } else {
        launcher.disable()
    };
    match (login, launcher.is_enabled()) {
        (Err(e), _) => format!(
            "could not {} the login entry: {e}; check that your home folder is writable",
            if on { "make" } else { "remove" }
        ),
        (Ok(()), Ok(true)) => login_entry_words(true),
        (Ok(()), _) => login_entry_words(false),
    }
}

/// The global-shortcut plugin, added the first time a shortcut is wanted: on X11 it polls the
/// X connection every 50 ms from its own thread (measured: about 0.1–0.3 % of a core at idle,
/// bench/README.md), a cost a user who sets no shortcut (`app.shortcut = ""`) does not pay.
fn shortcut_plugin<R: Runtime>(app: &AppHandle<R>, state: &DesktopState) -> Result<(), String> {
    if state
        .shortcut_plugin
        .load(std::sync::atomic::Ordering::SeqCst)
    {
        return Ok(());
    }
    app.plugin(
        tauri_plugin_global_shortcut::Builder::new()
            .with_handler(|app, _shortcut, event| {
                if event.state() == ShortcutState::Pressed {
                    toggle_popover(app);
                }
            })
            .build(),
    )
    .map_err(|e| e.to_string())?;
    state
        .shortcut_plugin
        .store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// Shows the popover, or hides it when it is showing (the tray icon's click and the shortcut).
pub fn toggle_popover<R: Runtime>(app: &AppHandle<R>) {
    if crate::popover::showing(app) {
        crate::popover::hide(app);
    } else {
        crate::show_popover(app);
    }
}

/// Places the popover under the tray icon once the icon has said where it is (macOS and
/// Windows report it; Linux's AppIndicator trays never do, and there the window manager
/// places the window).
pub fn place<R: Runtime>(w: &tauri::WebviewWindow<R>) {
    let _ = w.move_window_constrained(Position::TrayBottomCenter);
}

/// Makes the desktop match `wanted`: the login entry made or removed, the shortcut
/// (re)registered. What went wrong is kept as the key's note, not raised: the app runs on.
pub fn apply<R: Runtime>(app: &AppHandle<R>, wanted: &AppConfig) {
    let state = app.state::<DesktopState>();
    state.set_note("app.open_at_login", login_entry(app, wanted.open_at_login));
    if crate::relay::external() {
        // `headroom-tray` holds the shortcut: it reads the settings again when told.
        crate::relay::to_tray(&headroom_core::menubar::ToTray::Settings);
        let want = wanted.shortcut.trim();
        state.set_note(
            "app.shortcut",
            if want.is_empty() {
                "no shortcut: open the popover from the tray icon".to_owned()
            } else {
                format!("{want} opens and closes the popover (held by Headroom's tray process)")
            },
        );
        return;
    }

    let mut now = lock(&state.shortcut);
    let want = wanted.shortcut.trim().to_owned();
    if now.as_deref() == Some(want.as_str()) {
        return;
    }
    if let Some(old) = now.take() {
        let _ = app.global_shortcut().unregister(old.as_str());
    }
    let note = if want.is_empty() {
        "no shortcut: open the popover from the tray icon".to_owned()
    } else if let Err(e) = shortcut_plugin(app, &state) {
        format!("{want} could not be registered: the shortcut service did not start ({e})")
    } else {
        match app.global_shortcut().register(want.as_str()) {
            Ok(()) => {
                *now = Some(want.clone());
                format!("{want} opens and closes the popover from any app")
            }
            Err(e) => format!(
                "{want} could not be registered ({e}); another app may hold it: pick another"
            ),
        }
    };
    state.set_note("app.shortcut", note);
}

/// Where the login entry lives on Linux, in words.
#[cfg(not(target_os = "macos"))]
fn login_entry_words(on: bool) -> String {
    let place = {
        let home = std::env::var_os("HOME").map_or_else(
            || "~".to_owned(),
            |h| std::path::PathBuf::from(h).display().to_string(),
        );
        format!("{home}/.config/autostart/Headroom.desktop")
    };
    if on {
        format!("starts at login: {place}")
    } else {
        format!("does not start at login (no {place})")
    }
}

/// Reads `[app]` and applies it (at start; a broken file leaves the desktop as it is and says
/// so in the Settings panel, which shows the file's error).
pub fn apply_config<R: Runtime>(app: &AppHandle<R>) {
    match headroom_store::config::load() {
        Ok(c) => apply(app, &c.app),
        Err(e) => eprintln!("headroom-app: [app] settings not applied: {e}"),
    }
}

/// The native folder chooser, opened at `start` when given; `None` when the user cancels.
#[tauri::command]
pub async fn pick_folder(
    app: AppHandle,
    start: Option<String>,
) -> Result<Option<String>, AppError> {
    use tauri_plugin_dialog::DialogExt;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut dialog = app.dialog().file().set_title("Choose the project's folder");
    // At the folder typed so far, else the home folder (GTK's chooser would open on "Recent",
    // where a folder cannot be chosen).
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let at = start
        .map(std::path::PathBuf::from)
        .filter(|d| d.is_dir())
        .or(home.filter(|h| h.is_dir()));
    if let Some(dir) = at {
        dialog = dialog.set_directory(dir);
    }
    if let Some(w) = app.get_webview_window(crate::POPOVER) {
        dialog = dialog.set_parent(&w);
    }
    dialog.pick_folder(move |picked| {
        let _ = tx.send(picked);
    });
    crate::util::blocking(move || {
        let picked = rx.recv().ok().flatten();
        Ok(picked
            .and_then(|p| p.into_path().ok())
            .map(|p| p.display().to_string()))
    })
    .await
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_instance_per_headroom_folder_under_a_valid_dbus_name() {
        let a = super::instance_id(
            "dev.headroom.menubar",
            std::path::Path::new("/home/a/.headroom"),
        );
        let b = super::instance_id("dev.headroom.menubar", std::path::Path::new("/tmp/x"));
        assert_ne!(a, b);
        assert_eq!(
            a,
            super::instance_id(
                "dev.headroom.menubar",
                std::path::Path::new("/home/a/.headroom")
            )
        );
        for part in a.split('.') {
            assert!(
                !part.is_empty() && !part.starts_with(|c: char| c.is_ascii_digit()),
                "{a}"
            );
            assert!(
                part.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{a}"
            );
        }
        assert!(a.len() < 255, "{a}");
    }
}
