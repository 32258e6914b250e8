//! Whether `headroom-tray` holds the tray (this app then being its popover's process, see
//! `linked`), and the one way to write to it: a line on standard output. A leaf: it imports no
//! other module of the app.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use headroom_core::menubar::ToTray;

/// Set when `headroom-tray` started this app: the tray is in that process.
static EXTERNAL: AtomicBool = AtomicBool::new(false);

/// From now on the tray is `headroom-tray`'s: parts go to it on standard output.
pub fn set_external() {
    EXTERNAL.store(true, Ordering::SeqCst);
}

/// Whether `headroom-tray` holds the tray (this app is its popover's process).
pub fn external() -> bool {
    EXTERNAL.load(Ordering::SeqCst)
}

/// Writes `message` to the tray process, a line on standard output (nothing when this app has
/// its own tray). A tray process that is gone is no error here: the app runs on.
pub fn to_tray(message: &ToTray) {
    if !external() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", message.line()).and_then(|()| out.flush());
}
