//! The popover's process: `headroom-app --popover`, started on the first order that finds none
//! running, told each order as a line on its standard input; its standard output read for the
//! tray's parts. Each start is a generation: lines and the end of an older one are ignored.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use headroom_core::menubar::{ToPopover, ToTray};
use tao::event_loop::EventLoopProxy;

use crate::Msg;

/// The slots of the jobs this tray runs: the sweep's and the memory job's.
pub type Jobs = (
    Arc<headroom_core::jobs::live::SweepSlot>,
    Arc<headroom_core::jobs::live_memory::MemorySlot>,
);

/// The running popover's process and the end of the pipe its orders go through.
pub struct Popover {
    proxy: EventLoopProxy<Msg>,
    /// The project the decision is judged from: a new popover starts on it.
    project: Arc<Mutex<Option<String>>>,
    running: Option<(Child, ChildStdin)>,
    generation: u64,
    without: Vec<&'static str>,
    /// The sweep and the memory job this tray runs: a new popover's process is told of them
    /// first.
    jobs: Jobs,
}

/// The longest the tray's background work (its readiness check) waits for an opening popover.
const OPENING_HOLD: Duration = Duration::from_millis(1500);

/// Whether a popover's process was ever started by this tray (its files are then in the disk
/// cache: the read-ahead has nothing left to do).
static EVER_STARTED: AtomicBool = AtomicBool::new(false);

/// Whether this tray has started a popover's process yet.
pub fn ever_started() -> bool {
    EVER_STARTED.load(Ordering::SeqCst)
}

/// Where `headroom-app` is: `HEADROOM_APP_BIN`, else beside this binary.
pub fn app_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("HEADROOM_APP_BIN") {
        return PathBuf::from(p);
    }
    let me = std::env::current_exe().unwrap_or_default();
    me.with_file_name(format!("headroom-app{}", std::env::consts::EXE_SUFFIX))
}

impl Popover {
    /// The popover to start with `without` left out of its environment (what this process set
    /// for itself only).
    pub fn new(
        proxy: EventLoopProxy<Msg>,
        project: Arc<Mutex<Option<String>>>,
        without: Vec<&'static str>,
        jobs: Jobs,
    ) -> Self {
        Self {
            proxy,
            project,
            running: None,
            generation: 0,
            without,
            jobs,
        }
    }

    /// Tells the running popover's process `what` (nothing when none runs: none is started).
    pub fn tell(&mut self, what: &ToPopover) {
        if let Some((_, stdin)) = self.running.as_mut() {
            let _ = writeln!(stdin, "{}", what.line()).and_then(|()| stdin.flush());
        }
    }

    /// Whether `generation` is the running start's.
    pub fn is_current(&self, generation: u64) -> bool {
        self.running.is_some() && generation == self.generation
    }

    /// Gives `order` to the popover, starting one where none runs (a toggle then shows it).
    pub fn order(&mut self, order: ToPopover) {
        if let Some((_, stdin)) = self.running.as_mut() {
            if writeln!(stdin, "{}", order.line())
                .and_then(|()| stdin.flush())
                .is_ok()
            {
                return;
            }
            // Its end of the pipe is closed: it is ending; start another.
            self.reap();
        }
        let order = match order {
            ToPopover::Toggle => ToPopover::Show(None),
            ToPopover::Quit => return,
            o => o,
        };
        if let Err(e) = self.start() {
            eprintln!("headroom-tray: cannot start the popover: {e}");
            return;
        }
        if let Some((_, stdin)) = self.running.as_mut() {
            let _ = writeln!(stdin, "{}", order.line()).and_then(|()| stdin.flush());
        }
    }

    fn start(&mut self) -> std::io::Result<()> {
        EVER_STARTED.store(true, Ordering::SeqCst);
        // The readiness check's Pythons wait while the popover opens (until its page has
        // loaded, `ToTray::Loaded`; at most OPENING_HOLD): an open pressed during the start-up
        // check would otherwise share the cores with torch's imports.
        headroom_probe::child::hold_background(OPENING_HOLD);
        let bin = app_binary();
        let mut cmd = Command::new(&bin);
        cmd.arg("--popover")
            .env_remove("HEADROOM_APP_OPEN")
            .env_remove("HEADROOM_TRAY_OPEN")
            // The tray is in the Headroom group of the popover's memory bar.
            .env("HEADROOM_TRAY_PID", std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for key in &self.without {
            cmd.env_remove(key);
        }
        match self.project.lock().ok().and_then(|p| p.clone()) {
            Some(p) => cmd.env("HEADROOM_APP_PROJECT", p),
            None => cmd.env_remove("HEADROOM_APP_PROJECT"),
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", bin.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("no pipe to the popover"));
        };
        self.generation += 1;
        let (generation, proxy) = (self.generation, self.proxy.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match serde_json::from_str::<ToTray>(&line) {
                    Ok(t) => {
                        let _ = proxy.send_event(Msg::FromPopover(generation, t));
                    }
                    // Something else on its standard output: passed on, not lost.
                    Err(_) => eprintln!("{line}"),
                }
            }
            let _ = proxy.send_event(Msg::PopoverGone(generation));
        });
        eprintln!(
            "headroom-tray: popover started (pid {}, {})",
            child.id(),
            bin.display()
        );
        self.running = Some((child, stdin));
        // The jobs this tray runs (or ran last), before any order: the panels show them at once.
        if let Some(s) = self.jobs.0.snapshot() {
            self.tell(&ToPopover::Sweep(Box::new(s)));
        }
        if let Some(s) = self.jobs.1.snapshot() {
            self.tell(&ToPopover::Memory(Box::new(s)));
        }
        Ok(())
    }

    /// The start of `generation` ended (its output closed): reaped.
    pub fn gone(&mut self, generation: u64) {
        if generation == self.generation {
            self.reap();
        }
    }

    fn reap(&mut self) {
        if let Some((mut child, stdin)) = self.running.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }

    /// Quit: the popover is told to end and given a few seconds (a running sweep stops with
    /// it), then ended.
    pub fn quit(&mut self) {
        let Some((mut child, mut stdin)) = self.running.take() else {
            return;
        };
        let _ = writeln!(stdin, "{}", ToPopover::Quit.line()).and_then(|()| stdin.flush());
        drop(stdin);
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}
