//! The app as `headroom-tray`'s popover (`headroom-app --popover`): the tray, its shortcut and
//! the decision's notifications live in that small process, which starts this one when the
//! popover is opened. Orders come in on standard input ([`ToPopover`], a line each); the tray's
//! parts go out on standard output ([`crate::relay::to_tray`]). The jobs the panels start — a
//! sweep, a memory job, a screen tunnel — are orders to the tray, which runs them and sends
//! their snapshots back as lines ([`crate::mirror`]). Once its window is gone (dropped a while
//! after the close, [`crate::popover::keep_for`]) the process ends, and WebKit's processes with
//! it: a closed Headroom is then the tray process alone, whatever runs (the tray hands the
//! training over to a remote host itself too).

use std::io::BufRead as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use headroom_core::menubar::ToPopover;
use tauri::{AppHandle, Manager, Runtime};

/// `headroom-app` started plain — no argument, no `HEADROOM_APP_OPEN=1`: the desktop entry, the
/// login item, a double click — becomes `headroom-tray` when that binary is beside it, so the
/// light two-process menu bar is what a user starts; `HEADROOM_APP_ALONE=1` keeps the whole app
/// in this one process. Where an app already runs on this Headroom folder (it holds `app.lock`)
/// this start goes on as before and hands over to it (the single-instance plugin). Returns only
/// when it did not become the tray.
pub fn become_the_tray_when_started_plain() {
    let plain = std::env::args_os().len() == 1
        && std::env::var_os("HEADROOM_APP_OPEN").is_none_or(|v| v != "1")
        && std::env::var_os("HEADROOM_APP_ALONE").is_none_or(|v| v != "1");
    if !plain {
        return;
    }
    let Ok(me) = std::env::current_exe() else {
        return;
    };
    let tray = me.with_file_name(format!("headroom-tray{}", std::env::consts::EXE_SUFFIX));
    if !tray.is_file() {
        return;
    }
    let app_running = headroom_store::paths::data_dir().is_ok_and(|dir| {
        matches!(
            headroom_store::instance::acquire_in(&dir, crate::single::LOCK, "Headroom"),
            Err(headroom_store::instance::LockError::Held(_))
        )
    });
    if app_running {
        return;
    }
    use std::os::unix::process::CommandExt as _;
    let e = std::process::Command::new(&tray)
        .env("HEADROOM_APP_BIN", &me)
        .exec();
    eprintln!(
        "headroom-app: cannot start {} ({e}); running the whole app in this process",
        tray.display()
    );
}

/// How often the idle check looks.
const IDLE_EVERY: Duration = Duration::from_millis(500);

/// Whether a job of this process runs now: the process must live on without its window. Under
/// the tray none does (the jobs are the tray's); this counts for the app run alone.
pub fn busy<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.state::<crate::sweep::SweepSlot>().running()
        || app.state::<crate::memory::MemorySlot>().running()
        || app.state::<crate::remote::VncSlot>().open()
        || crate::handoff::under_way()
}

/// Whether the process should end now: it was given an order (or its window was made) and
/// has no window now (or the tray process that started it is gone and it has no window), and
/// nothing runs.
pub fn should_end(ordered: bool, window_now: bool, tray_gone: bool, busy: bool) -> bool {
    !window_now && !busy && (ordered || tray_gone)
}

/// Hands the tray to `headroom-tray`, follows its orders and ends the process when idle.
pub fn start<R: Runtime>(app: &AppHandle<R>) {
    crate::relay::set_external();
    // The project the tray judges from, so the panels open on it (`HEADROOM_APP_PROJECT`).
    // The tray's choice stands, none included (this process read the remembered one at its
    // start, which the tray may have moved from since).
    app.state::<crate::overview::OverviewSlot>().start_with(
        std::env::var("HEADROOM_APP_PROJECT")
            .ok()
            .filter(|p| !p.is_empty()),
    );
    let tray_gone = Arc::new(AtomicBool::new(false));
    // Set once an order was carried out: until then a process with no window yet is starting,
    // not closed.
    let ordered = Arc::new(AtomicBool::new(false));
    let (handle, gone, done) = (app.clone(), tray_gone.clone(), ordered.clone());
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            let Some(order) = ToPopover::parse(&line) else {
                eprintln!("headroom-app: an order from the tray that does not read: {line:?}");
                continue;
            };
            // The tray's sweep: mirrored here, off the main thread.
            let order = match order {
                ToPopover::Sweep(s) => {
                    handle.state::<crate::sweep::TraySweep>().heard(*s);
                    continue;
                }
                ToPopover::SweepStarted(r) => {
                    handle.state::<crate::sweep::TraySweep>().answered(r);
                    continue;
                }
                ToPopover::Memory(s) => {
                    handle.state::<crate::memory::TrayMemory>().heard(*s);
                    continue;
                }
                ToPopover::MemoryStarted(r) => {
                    handle.state::<crate::memory::TrayMemory>().answered(r);
                    continue;
                }
                ToPopover::ScreenOpened(r) => {
                    handle.state::<crate::remote::TrayScreen>().answered(r);
                    continue;
                }
                o => o,
            };
            let (h, done) = (handle.clone(), done.clone());
            let _ = handle.run_on_main_thread(move || {
                match order {
                    ToPopover::Show(None) => crate::show_popover(&h),
                    ToPopover::Show(Some(panel)) => crate::show_popover_on(&h, &panel),
                    ToPopover::Toggle => crate::desktop::toggle_popover(&h),
                    ToPopover::Quit => h.exit(0),
                    ToPopover::Sweep(_)
                    | ToPopover::SweepStarted(_)
                    | ToPopover::Memory(_)
                    | ToPopover::MemoryStarted(_)
                    | ToPopover::ScreenOpened(_) => {}
                }
                done.store(true, Ordering::SeqCst);
            });
        }
        // The tray process ended (or closed its end): this one ends once idle.
        gone.store(true, Ordering::SeqCst);
    });
    let app = app.clone();
    std::thread::spawn(move || loop {
        std::thread::sleep(IDLE_EVERY);
        let now = app.get_webview_window(crate::POPOVER).is_some();
        let (was_ordered, gone) = (
            ordered.load(Ordering::SeqCst),
            tray_gone.load(Ordering::SeqCst),
        );
        if should_end(was_ordered, now, gone, busy(&app)) {
            eprintln!("headroom-app: the popover is closed and nothing runs: ending");
            app.exit(0);
            return;
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_popovers_process_ends_only_when_its_window_is_gone_and_nothing_runs() {
        use super::should_end;
        // Started, no order carried out yet: wait for it.
        assert!(!should_end(false, false, false, false));
        // Showing, or hidden within its keep time: the window is there.
        assert!(!should_end(true, true, false, false));
        // Dropped (or a hand-off done without a window): end, unless a job runs.
        assert!(should_end(true, false, false, false));
        assert!(!should_end(true, false, false, true));
        // The tray process gone before any window: end when idle.
        assert!(should_end(false, false, true, false));
        assert!(!should_end(false, false, true, true));
    }
}
