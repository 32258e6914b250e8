//! The popover's life: its window (and the WebKit processes behind it) is made when it is first
//! shown and dropped once it has stayed hidden for [`keep_for`], so a closed Headroom holds
//! almost nothing while a quick close-and-open stays instant. The panels' state lives in the
//! app's slots, not in the page: a popover made again draws what they hold.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tauri::{AppHandle, Manager, Runtime, WebviewWindow};

/// How long a hidden popover is kept before its webview is dropped, unless
/// `HEADROOM_APP_KEEP_POPOVER_S` says otherwise (the benchmarks and tests shorten it).
pub const KEEP_FOR: Duration = Duration::from_secs(60);

/// Counts hides: a drop scheduled by one hide is void once the popover was shown (and maybe
/// hidden again) after it.
#[derive(Debug, Default)]
pub struct Hides(AtomicU64);

/// The hidden popover's keep time, from the environment where it is set.
pub fn keep_for() -> Duration {
    crate::util::seconds_env("HEADROOM_APP_KEEP_POPOVER_S", KEEP_FOR)
}

/// The popover's window: the one there is, or one made now from the configuration (opening on
/// `panel` when one is given: the page reads it at its start, before any event could reach it).
pub fn window<R: Runtime>(app: &AppHandle<R>, panel: Option<&str>) -> Option<WebviewWindow<R>> {
    if let Some(w) = app.get_webview_window(crate::POPOVER) {
        return Some(w);
    }
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == crate::POPOVER)?
        .clone();
    let made = tauri::WebviewWindowBuilder::from_config(app, &config).and_then(|b| {
        match panel {
            Some(p) => b.initialization_script(start_panel_script(p)),
            None => b,
        }
        .build()
    });
    match made {
        Ok(w) => Some(w),
        Err(e) => {
            eprintln!("headroom-app: cannot make the popover: {e}");
            None
        }
    }
}

/// The script that tells a page made for `panel` where to open (a JSON string, so no panel
/// name can break out of it).
pub fn start_panel_script(panel: &str) -> String {
    format!(
        "window.__headroomPanel = {};",
        serde_json::Value::String(panel.to_owned())
    )
}

/// Whether the popover is made and showing.
pub fn showing<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.get_webview_window(crate::POPOVER)
        .is_some_and(|w| w.is_visible().unwrap_or(false))
}

/// Hides the popover and drops its webview once it has stayed hidden for [`keep_for`].
pub fn hide<R: Runtime>(app: &AppHandle<R>) {
    let Some(w) = app.get_webview_window(crate::POPOVER) else {
        return;
    };
    let _ = w.hide();
    let hides = &app.state::<Hides>().0;
    let this = hides.fetch_add(1, Ordering::SeqCst) + 1;
    let app = app.clone();
    let keep = keep_for();
    std::thread::spawn(move || {
        std::thread::sleep(keep);
        // Shown (or hidden again) since: that later hide decides.
        if app.state::<Hides>().0.load(Ordering::SeqCst) != this || showing(&app) {
            return;
        }
        if let Some(w) = app.get_webview_window(crate::POPOVER) {
            let _ = w.destroy();
        }
    });
}

/// Marks a showing: drops scheduled before it are void.
pub fn shown<R: Runtime>(app: &AppHandle<R>) {
    app.state::<Hides>().0.fetch_add(1, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keep_time_is_read_in_seconds_and_falls_back_to_a_minute() {
        let keep_from = |t| crate::util::seconds_or(t, KEEP_FOR);
        assert_eq!(keep_from(Some("5")), Duration::from_secs(5));
        assert_eq!(keep_from(Some(" 0 ")), Duration::ZERO);
        assert_eq!(keep_from(Some("soon")), KEEP_FOR);
        assert_eq!(keep_from(None), Duration::from_secs(60));
    }

    #[test]
    fn a_panel_name_is_given_to_the_page_as_a_json_string() {
        assert_eq!(
            start_panel_script("remote"),
            r#"window.__headroomPanel = "remote";"#
        );
        assert_eq!(
            start_panel_script("x\"; alert(1); \""),
            r#"window.__headroomPanel = "x\"; alert(1); \"";"#
        );
    }
}
