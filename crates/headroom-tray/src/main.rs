//! `headroom-tray`: Headroom in the menu bar at the cost of a tray icon. This process holds the
//! icon (its colour the readiness verdict and the decision), its menu, the global shortcut and
//! the decision's loop with its notifications — and no WebKit. The popover is `headroom-app
//! --popover`, started when it is opened and told what to show on its standard input; it ends
//! once closed and idle (`headroom-app`'s `linked` module), so a closed Headroom is this process
//! alone. Its panels' parts of the tray's look come back as lines on its standard output.
//!
//! `headroom-app` is looked for beside this binary (`HEADROOM_APP_BIN` says where otherwise).
//! `headroom-app` started alone still runs the whole app in one process (its own tray).

#[cfg(target_os = "linux")]
mod host;
mod popover;
mod sweeps;

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use global_hotkey::hotkey::HotKey;
use global_hotkey::{GlobalHotKeyEvent, GlobalHotKeyManager, HotKeyState};
use headroom_core::jobs::live::{Change, SweepSlot, SweepSnapshot};
use headroom_core::jobs::live_memory::{self, MemorySlot, MemorySnapshot};
use headroom_core::jobs::sweep::JobError;
use headroom_core::menubar::{
    change_notice, icon_rgba, look, DecisionLine, Kind, MemoryLine, SweepLine, ToPopover, ToTray,
    TrayFacts, TrayLook, TrayPart, MENU,
};
use headroom_core::remote::vnc::Tunnel;
use tao::event::{Event, StartCause};
use tao::event_loop::{ControlFlow, EventLoopBuilder, EventLoopProxy};
use tray_icon::menu::{Menu, MenuEvent, MenuItem};
use tray_icon::{Icon, MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};

/// What reaches the event loop.
#[derive(Debug)]
pub enum Msg {
    /// A menu item, by id.
    Menu(String),
    /// The icon clicked (macOS, Windows; Linux's AppIndicator trays report no clicks).
    Click,
    /// The shortcut pressed.
    Shortcut,
    /// A line from the popover's process, of its generation.
    FromPopover(u64, ToTray),
    /// The popover's process of that generation ended.
    PopoverGone(u64),
    /// A part of the look from this process's own threads (the decision, readiness).
    Part(TrayPart),
    /// A notification's button or click: show the popover on this panel.
    Open(String),
    /// The contention notice's "Continue on the remote host".
    Continue,
    /// The sweep this tray runs changed (its snapshot now).
    Sweep(Box<SweepSnapshot>, Change),
    /// A sweep a popover ordered was started (its snapshot) or refused.
    SweepAnswer(Result<Box<SweepSnapshot>, JobError>),
    /// The memory job this tray runs changed (its snapshot now).
    Memory(Box<MemorySnapshot>, Change),
    /// A memory job a popover ordered was started (its snapshot) or refused.
    MemoryAnswer(Result<Box<MemorySnapshot>, JobError>),
    /// The tunnel to a host's screen a popover asked for: opened (held here) or why not.
    Screen(Result<(String, Tunnel), JobError>),
}

const ICON_SIZE: u32 = 32;

fn icon(l: &TrayLook) -> Option<Icon> {
    Icon::from_rgba(icon_rgba(l.colour, ICON_SIZE), ICON_SIZE, ICON_SIZE).ok()
}

fn main() {
    // GTK opens GL only to choose its visuals: 25 MiB of Mesa's libLLVM in a process that draws
    // an icon (bench/README.md). The popover's process gets the environment as it was.
    #[cfg(target_os = "linux")]
    let gl_set_here = std::env::var_os("GDK_GL").is_none();
    #[cfg(target_os = "linux")]
    if gl_set_here {
        std::env::set_var("GDK_GL", "disable");
    }
    let _lock = match headroom_store::instance::acquire("tray.lock", "Headroom's tray") {
        Ok(l) => l,
        Err(e) => {
            // Started again (a double click on the app): the running tray opens its popover.
            let asked = headroom_store::instance::holder("tray.lock")
                .and_then(|pid| i32::try_from(pid).ok())
                .filter(|pid| *pid > 1)
                // SAFETY: kill only sends SIGUSR1, which the tray waits for (`open_on_signal`).
                .is_some_and(|pid| unsafe { libc::kill(pid, libc::SIGUSR1) } == 0);
            eprintln!(
                "headroom-tray: {e}{}",
                if asked { "; its popover opens" } else { "" }
            );
            std::process::exit(0);
        }
    };
    // SIGUSR1 ("open the popover", from a second start) is waited for by one thread: blocked
    // here, before any thread starts, so every thread inherits the mask (the popover's process
    // gets a clean one: std resets it at exec).
    let usr1 = sigusr1_set();
    // SAFETY: a valid signal set; blocking SIGUSR1 in this thread only (and those it starts).
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &raw const usr1, std::ptr::null_mut());
    }
    // Without a display GTK cannot start and tao panics: said in a line instead.
    std::panic::set_hook(Box::new(|_| {}));
    let built = std::panic::catch_unwind(|| EventLoopBuilder::<Msg>::with_user_event().build());
    let _ = std::panic::take_hook();
    let Ok(event_loop) = built else {
        eprintln!(
            "headroom-tray: no display to put a menu bar on (is DISPLAY or WAYLAND_DISPLAY set?); \
             `headroom` runs everything from a terminal"
        );
        std::process::exit(1);
    };
    #[cfg(target_os = "macos")]
    let event_loop = {
        use tao::platform::macos::{ActivationPolicy, EventLoopExtMacOS};
        let mut l = event_loop;
        l.set_activation_policy(ActivationPolicy::Accessory);
        l
    };
    let proxy = event_loop.create_proxy();
    {
        let p = proxy.clone();
        MenuEvent::set_event_handler(Some(move |e: MenuEvent| {
            let _ = p.send_event(Msg::Menu(e.id.0));
        }));
        let p = proxy.clone();
        TrayIconEvent::set_event_handler(Some(move |e: TrayIconEvent| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = e
            {
                let _ = p.send_event(Msg::Click);
            }
        }));
        let p = proxy.clone();
        GlobalHotKeyEvent::set_event_handler(Some(move |e: GlobalHotKeyEvent| {
            if e.state == HotKeyState::Pressed {
                let _ = p.send_event(Msg::Shortcut);
            }
        }));
    }
    #[cfg(target_os = "linux")]
    let set_here = if gl_set_here { vec!["GDK_GL"] } else { vec![] };
    #[cfg(not(target_os = "linux"))]
    let set_here = vec![];
    // The project chosen in the popover last time (kept in Headroom's folder): the decision is
    // judged from it and the contention notice hands it over before any popover opens.
    let project = Arc::new(Mutex::new(headroom_core::project::chosen()));
    let sweep = Arc::new(SweepSlot::default());
    let memory = Arc::new(MemorySlot::default());
    // The tunnel to a host's screen (Open VNC), until Close tunnel or Quit.
    let mut screen: Option<(String, Tunnel)> = None;
    let mut app = popover::Popover::new(
        proxy.clone(),
        project.clone(),
        set_here,
        (sweep.clone(), memory.clone()),
    );
    let keys = GlobalHotKeyManager::new()
        .map_err(|e| eprintln!("headroom-tray: no global shortcut here: {e}"))
        .ok();
    let mut shortcut: Option<HotKey> = None;
    let mut facts = TrayFacts::default();
    let mut shown: Option<TrayLook> = None;
    let mut tray: Option<TrayIcon> = None;
    event_loop.run(move |event, _, flow| {
        *flow = ControlFlow::Wait;
        let mut changed = false;
        match event {
            // The icon is made once the loop runs (macOS needs its application running).
            Event::NewEvents(StartCause::Init) => {
                tray = make_tray(&look(&facts));
                shown = Some(look(&facts));
                shortcut = apply_shortcut(keys.as_ref(), shortcut.take());
                decision_loop(proxy.clone(), project.clone());
                follow_remote_runs(proxy.clone());
                open_on_signal(proxy.clone(), usr1);
                readiness_once(proxy.clone());
                #[cfg(target_os = "linux")]
                tell_when_no_icon_shows(proxy.clone());
                prewarm_the_popover();
                eprintln!("headroom-tray: ready (pid {})", std::process::id());
                if open_at_start() {
                    app.order(ToPopover::Show(None));
                }
            }
            Event::UserEvent(msg) => match msg {
                Msg::Menu(id) => match id.as_str() {
                    "quit" => {
                        // A running sweep stops (its points kept, its run marked interrupted).
                        sweep.cancel_and_wait(Duration::from_secs(5));
                        memory.stop_and_wait(Duration::from_secs(5));
                        screen = None;
                        app.quit();
                        *flow = ControlFlow::Exit;
                    }
                    "open" => app.order(ToPopover::Show(None)),
                    panel => app.order(ToPopover::Show(Some(panel.to_owned()))),
                },
                Msg::Click | Msg::Shortcut => app.order(ToPopover::Toggle),
                Msg::Open(panel) => app.order(ToPopover::Show(Some(panel))),
                Msg::Continue => continue_on_remote(&proxy, &project),
                Msg::FromPopover(generation, line) if app.is_current(generation) => match line {
                    ToTray::Part(part) => {
                        facts.take(part);
                        changed = true;
                    }
                    ToTray::Project(p) => {
                        if let Ok(mut g) = project.lock() {
                            *g = p;
                        }
                        // Its decision is judged from the next sample on.
                        facts.take(TrayPart::Decision(None));
                        changed = true;
                    }
                    ToTray::Settings => {
                        shortcut = apply_shortcut(keys.as_ref(), shortcut.take());
                    }
                    ToTray::Loaded => headroom_probe::child::release_background(),
                    ToTray::Sweep(order) => sweeps::start(&sweep, &proxy, order),
                    ToTray::CancelSweep => {
                        sweep.cancel();
                    }
                    ToTray::Memory(order) => sweeps::start_memory(&memory, &proxy, order),
                    ToTray::StopMemory => {
                        memory.stop();
                    }
                    ToTray::OpenScreen(name) => {
                        let p = proxy.clone();
                        std::thread::spawn(move || {
                            let opened = headroom_core::jobs::screen::open_screen(&name);
                            let _ = p.send_event(Msg::Screen(opened));
                        });
                    }
                    ToTray::CloseScreen => {
                        if let Some((url, _)) = screen.take() {
                            eprintln!("headroom-tray: the tunnel to {url} is closed");
                        }
                    }
                },
                Msg::FromPopover(..) => {}
                Msg::PopoverGone(generation) => app.gone(generation),
                Msg::Part(part) => {
                    facts.take(part);
                    changed = true;
                }
                Msg::Sweep(s, change) => {
                    if change == Change::Ended {
                        // For a popover made after this tray ends.
                        headroom_core::kept::keep("sweep", &*s);
                    }
                    if let Some(line) = sweeps::said(&s, change) {
                        eprintln!("{line}");
                        facts.take(TrayPart::Sweep(Some(SweepLine::of(&s))));
                        changed = true;
                    }
                    // To the popover's process if one runs (none is started for it).
                    app.tell(&ToPopover::Sweep(s));
                }
                Msg::SweepAnswer(answer) => {
                    if let Ok(s) = &answer {
                        facts.take(TrayPart::Sweep(Some(SweepLine::of(s))));
                        changed = true;
                    }
                    app.tell(&ToPopover::SweepStarted(answer));
                }
                Msg::Memory(s, change) => {
                    if change == Change::Ended {
                        headroom_core::kept::keep("memory", &*s);
                    }
                    if let Some((title, body)) = live_memory::notice(&s, change) {
                        notify(&proxy, Kind::Leak, &title, &body);
                    }
                    if let Some(line) = sweeps::said_memory(&s, change) {
                        eprintln!("{line}");
                        facts.take(TrayPart::Memory(Some(MemoryLine::of(&s))));
                        changed = true;
                    }
                    app.tell(&ToPopover::Memory(s));
                }
                Msg::Screen(opened) => {
                    let answer = match opened {
                        Ok((url, tunnel)) => {
                            eprintln!("headroom-tray: a tunnel to a host's screen: {url}");
                            // One at a time: a new one replaces (and closes) the last.
                            screen = Some((url.clone(), tunnel));
                            Ok(Box::new(url))
                        }
                        Err(e) => Err(e),
                    };
                    app.tell(&ToPopover::ScreenOpened(answer));
                }
                Msg::MemoryAnswer(answer) => {
                    if let Ok(s) = &answer {
                        facts.take(TrayPart::Memory(Some(MemoryLine::of(s))));
                        changed = true;
                    }
                    app.tell(&ToPopover::MemoryStarted(answer));
                }
            },
            _ => {}
        }
        if changed {
            let l = look(&facts);
            if shown.as_ref() != Some(&l) {
                if let Some(t) = &tray {
                    let _ = t.set_icon(icon(&l));
                    let _ = t.set_tooltip(Some(&l.tooltip));
                }
                shown = Some(l);
            }
        }
    });
}

/// The tray icon with its menu, or `None` where the desktop has no tray (the shortcut still
/// opens the popover).
fn make_tray(first: &TrayLook) -> Option<TrayIcon> {
    let menu = Menu::new();
    for (id, label) in MENU {
        if let Err(e) = menu.append(&MenuItem::with_id(*id, *label, true, None)) {
            eprintln!("headroom-tray: menu item {label}: {e}");
        }
    }
    let mut b = TrayIconBuilder::new()
        .with_id("headroom")
        .with_menu(Box::new(menu))
        .with_menu_on_left_click(false)
        .with_tooltip(&first.tooltip);
    if let Some(i) = icon(first) {
        b = b.with_icon(i);
    }
    b.build()
        .map_err(|e| eprintln!("headroom-tray: no tray icon here: {e}"))
        .ok()
}

/// Registers the configured shortcut in place of `old` (the settings read again).
fn apply_shortcut(keys: Option<&GlobalHotKeyManager>, old: Option<HotKey>) -> Option<HotKey> {
    let keys = keys?;
    if let Some(o) = old {
        let _ = keys.unregister(o);
    }
    let want = match headroom_store::config::load() {
        Ok(c) => c.app.shortcut.trim().to_owned(),
        Err(e) => {
            eprintln!("headroom-tray: [app] settings not read ({e}); the default shortcut");
            headroom_store::config::DEFAULT_SHORTCUT.to_owned()
        }
    };
    if want.is_empty() {
        return None;
    }
    let key = match HotKey::from_str(&want) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("headroom-tray: app.shortcut = {want:?} does not read: {e}");
            return None;
        }
    };
    match keys.register(key) {
        Ok(()) => Some(key),
        Err(e) => {
            eprintln!(
                "headroom-tray: {want} could not be registered ({e}); another app may hold it"
            );
            None
        }
    }
}

/// The decision, recomputed in the background as the app's Overview does: painted on the icon
/// when it changes, told as a notification when the verdict moves or contention starts.
fn decision_loop(proxy: EventLoopProxy<Msg>, project: Arc<Mutex<Option<String>>>) {
    std::thread::spawn(move || {
        let mut sampler = headroom_probe::contention::Sampler::new();
        // No popover here: the process list is read only when it could raise contention.
        sampler.set_light(true);
        let mut prev: Option<headroom_decide::Decision> = None;
        let mut chosen: Option<String> = None;
        let mut ticks: u32 = 0;
        loop {
            let now_project = project.lock().map(|p| p.clone()).unwrap_or_default();
            if now_project != chosen {
                // Another project: its decision is news only from its own first sample.
                prev = None;
                chosen = now_project;
            }
            let (now, _problem) =
                headroom_core::jobs::decide_now::now(&mut sampler, chosen.as_deref());
            if let Some((kind, title, body)) = change_notice(prev.as_ref(), &now.decision) {
                notify(&proxy, kind, &title, &body);
            }
            let line = DecisionLine::of(&now.decision);
            if prev.as_ref().map(DecisionLine::of) != Some(line.clone())
                && proxy
                    .send_event(Msg::Part(TrayPart::Decision(Some(line))))
                    .is_err()
            {
                // The event loop is gone: the process is ending.
                return;
            }
            prev = Some(now.decision);
            // glibc keeps freed heap pages in its arenas: hand them back once a minute.
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            if ticks.is_multiple_of(12) {
                // SAFETY: malloc_trim only releases free memory at the top of the heaps.
                unsafe {
                    libc::malloc_trim(0);
                }
            }
            ticks = ticks.wrapping_add(1);
            std::thread::sleep(Duration::from_secs(now.interval_s.max(1)));
        }
    });
}

/// "Continue on the remote host" (the contention notice's button), done here — no popover's
/// process, no WebKit, while memory is short: the project the decision is judged from started,
/// detached, on the first host its migration reached, and a notification says where; where none
/// did, the popover opens on the Remote panel, whose wizard shows the first step missing.
fn continue_on_remote(proxy: &EventLoopProxy<Msg>, project: &Arc<Mutex<Option<String>>>) {
    let chosen = project.lock().map(|p| p.clone()).unwrap_or_default();
    let proxy = proxy.clone();
    std::thread::spawn(move || {
        match headroom_core::jobs::remote_runs::continue_chosen(chosen.as_deref()) {
            Ok((title, body)) => notify(&proxy, Kind::Verdict, &title, &body),
            Err(why) => {
                eprintln!("headroom-tray: continue on the remote host: {why}");
                let _ = proxy.send_event(Msg::Open("remote".into()));
            }
        }
    });
}

/// The runs training on remote hosts, followed every minute (`HEADROOM_APP_REMOTE_FOLLOW_S`)
/// whether the popover is open or not: each host with runs in flight (as the ledger last saw
/// them) is asked over ssh, what they did is mirrored into the ledger, the icon counts those
/// still running, and a run that ended since the last look is said in a notification.
fn follow_remote_runs(proxy: EventLoopProxy<Msg>) {
    let every = std::env::var("HEADROOM_APP_REMOTE_FOLLOW_S")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(60), Duration::from_secs);
    std::thread::spawn(move || loop {
        match headroom_core::jobs::remote_runs::follow_up_now() {
            Ok(f) => {
                for (host, r) in &f.ended {
                    let (title, body) = headroom_core::jobs::remote_runs::ended_notice(host, r);
                    notify(&proxy, Kind::Verdict, &title, &body);
                }
                let line = headroom_core::menubar::RemoteLine {
                    running: f.running.into_iter().collect(),
                };
                if proxy
                    .send_event(Msg::Part(TrayPart::Remote(Some(line))))
                    .is_err()
                {
                    return;
                }
                for (host, why) in &f.unreachable {
                    eprintln!("headroom-tray: the runs on {host} could not be asked: {why}");
                }
            }
            Err(e) => eprintln!("headroom-tray: the runs on remote hosts were not followed: {e}"),
        }
        std::thread::sleep(every);
    });
}

/// Where the desktop shows no tray icon (`host`), the tray says so on its standard error two
/// seconds after its start, and — when there is still none 20 s after it (a panel may start after
/// Headroom at login) — in a notification, once per desktop (`XDG_CURRENT_DESKTOP`): with the
/// shortcut that opens the popover.
#[cfg(target_os = "linux")]
fn tell_when_no_icon_shows(proxy: EventLoopProxy<Msg>) {
    std::thread::spawn(move || {
        let shortcut = headroom_store::config::load().map_or_else(
            |_| headroom_store::config::DEFAULT_SHORTCUT.to_owned(),
            |c| c.app.shortcut,
        );
        std::thread::sleep(Duration::from_secs(2));
        let Some((_, body)) = host::notice(host::probe(), Some(&shortcut)) else {
            return;
        };
        eprintln!("headroom-tray: no tray icon can show here yet: {body}");
        std::thread::sleep(Duration::from_secs(18));
        let Some((title, body)) = host::notice(host::probe(), Some(&shortcut)) else {
            eprintln!("headroom-tray: a tray host came up: the icon shows");
            return;
        };
        let desktop = std::env::var("XDG_CURRENT_DESKTOP").unwrap_or_default();
        let marker = headroom_store::paths::data_dir()
            .map(|d| d.join("told-no-tray-icon"))
            .ok();
        let told = marker
            .as_ref()
            .and_then(|m| std::fs::read_to_string(m).ok())
            .is_some_and(|t| t.trim() == desktop.trim());
        if told {
            return;
        }
        notify(&proxy, Kind::Verdict, &title, &body);
        if let Some(m) = marker {
            if let Err(e) = std::fs::write(&m, format!("{desktop}\n")) {
                eprintln!("headroom-tray: cannot write {}: {e}", m.display());
            }
        }
    });
}

/// One readiness check at start, recorded in the ledger only when it found something new (as
/// the app's Readiness panel does); its lights colour the icon.
fn readiness_once(proxy: EventLoopProxy<Msg>) {
    std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        let report = match headroom_core::jobs::doctor::refresh("tray") {
            Ok(r) => {
                eprintln!(
                    "headroom-tray: readiness checked in {:.1} s ({} Pythons)",
                    t0.elapsed().as_secs_f64(),
                    r.report.pythons.len()
                );
                if let Some(e) = &r.not_recorded {
                    eprintln!(
                        "headroom-tray: the readiness check was not recorded in the ledger: {e}"
                    );
                }
                r.report
            }
            Err(e) => {
                eprintln!("headroom-tray: no readiness check: {e}");
                return;
            }
        };
        let _ = proxy.send_event(Msg::Part(TrayPart::Readiness(Box::new(report))));
    });
}

/// A few seconds after the start, unless the popover was opened by then, `headroom-app
/// --prewarm` reads the popover's files into the disk cache (Linux; see its `prewarm` module),
/// so that the first open after a reboot does not wait on the disk. `HEADROOM_TRAY_PREWARM=0`
/// leaves it out.
/// `headroom-tray --open` (or `HEADROOM_TRAY_OPEN=1`, which a plain `headroom-app` start
/// passes on when it becomes the tray) opens the popover once the tray is ready: for a first
/// start from a terminal, and for the end-to-end test, which drives the popover's process.
fn open_at_start() -> bool {
    std::env::args().skip(1).any(|a| a == "--open")
        || std::env::var_os("HEADROOM_TRAY_OPEN").is_some_and(|v| v == "1")
}

fn prewarm_the_popover() {
    if !cfg!(target_os = "linux")
        || std::env::var_os("HEADROOM_TRAY_PREWARM").is_some_and(|v| v == "0")
    {
        return;
    }
    std::thread::spawn(|| {
        std::thread::sleep(PREWARM_AFTER);
        // Opened already: its files were read then.
        if popover::ever_started() {
            return;
        }
        let app = popover::app_binary();
        match std::process::Command::new(&app)
            .arg("--prewarm")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
        {
            Ok(s) if s.success() => {}
            Ok(s) => eprintln!("headroom-tray: {} --prewarm ended {s}", app.display()),
            Err(e) => eprintln!(
                "headroom-tray: cannot start {} --prewarm: {e}",
                app.display()
            ),
        }
    });
}

/// How long after its start the tray reads the popover's files ahead: the login's own work first.
const PREWARM_AFTER: Duration = Duration::from_secs(3);

/// Shows a notification (also written to stderr, so one the desktop cannot show is not lost).
/// On Linux a contention notice carries the buttons "Continue on the remote host" (the popover's
/// process hands the training over, without a window where it can) and "Open the Remote panel",
/// and a click on any notice opens the panel it is about.
fn notify(proxy: &EventLoopProxy<Msg>, kind: Kind, title: &str, body: &str) {
    eprintln!("headroom-tray: notification: {title}: {body}");
    let mut n = notify_rust::Notification::new();
    n.appname("Headroom").summary(title).body(body);
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        if kind == Kind::Contention {
            n.action(
                headroom_core::menubar::CONTINUE_REMOTE,
                "Continue on the remote host",
            );
            n.action(headroom_core::menubar::OPEN_REMOTE, "Open the Remote panel");
        }
        n.action("default", "Open Headroom");
        let proxy = proxy.clone();
        match n.show() {
            Ok(handle) => {
                std::thread::spawn(move || {
                    handle.wait_for_action(|action| {
                        if action == headroom_core::menubar::CONTINUE_REMOTE {
                            let _ = proxy.send_event(Msg::Continue);
                        } else if action != "__closed" {
                            let panel = headroom_core::menubar::panel_for(action, Some(kind.id()));
                            let _ = proxy.send_event(Msg::Open(panel.to_owned()));
                        }
                    });
                });
            }
            Err(e) => eprintln!("headroom-tray: the notification could not be shown: {e}"),
        }
    }
    #[cfg(target_os = "macos")]
    {
        let _ = (proxy, kind);
        if let Err(e) = n.show() {
            eprintln!("headroom-tray: the notification could not be shown: {e}");
        }
    }
}

/// The set holding SIGUSR1 alone.
fn sigusr1_set() -> libc::sigset_t {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set; sigaddset adds a valid signal to it.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), libc::SIGUSR1);
        set.assume_init()
    }
}

/// Opens the popover each time SIGUSR1 arrives (a second start of Headroom asks for it).
fn open_on_signal(proxy: EventLoopProxy<Msg>, set: libc::sigset_t) {
    std::thread::spawn(move || loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is a valid set, blocked in every thread of this process.
        let rc = unsafe { libc::sigwait(&raw const set, &raw mut sig) };
        if rc == 0 && sig == libc::SIGUSR1 && proxy.send_event(Msg::Menu("open".into())).is_err() {
            return;
        }
    });
}
