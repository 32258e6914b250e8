//! Desktop notifications: the one place the app speaks up while its popover is hidden. Each one
//! is also written to stderr, so a notification that the desktop cannot show is not lost.

use tauri::{AppHandle, Runtime};
use tauri_plugin_notification::NotificationExt;

/// Shows `title` with `body` through the OS notification centre (D-Bus on Linux).
pub fn send<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    eprintln!("headroom-app: notification: {title}: {body}");
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        eprintln!("headroom-app: the notification could not be shown: {e}");
    }
}

/// The notification for a watched process that crossed the leak threshold.
pub fn watch_crossed(title: &str, growth: f64, threshold: f64) -> (String, String) {
    (
        "Headroom: memory leak suspected".into(),
        format!(
            "{title} grew {:+.0} % since watching began, past the {:.0} % leak threshold. \
             Look for tensors kept across epochs (losses appended without .item(), caches), \
             or release memory at each epoch boundary.",
            growth * 100.0,
            threshold * 100.0
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crossing_message_cites_both_figures() {
        let (title, body) = watch_crossed("python train.py", 0.314, 0.26);
        assert!(title.contains("leak suspected"));
        assert!(body.starts_with("python train.py grew +31 %"), "{body}");
        assert!(body.contains("26 % leak threshold"), "{body}");
    }
}
