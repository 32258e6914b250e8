//! Running a child process to its end within a time limit, its output captured: the one loop
//! behind doctor's interpreter probes, the MLX side of a comparison, `ssh` checks of a remote
//! host, the app's `--version` question and the OS tools read on macOS (`sysctl`, `pmset`,
//! `vm_stat`, `ioreg`, `system_profiler`, `lipo`). Long-lived children that speak a protocol
//! (the worker, `headroom run`'s command) have their own supervisors in headroom-core's `jobs`.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Whether process `pid` exists (a process we may not signal still exists).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// How long a reader may still take after its child was killed: a grandchild that kept the
/// pipe open must not hold the caller.
const READ_GRACE: Duration = Duration::from_secs(1);

/// How long an OS tool may take (`system_profiler` takes about 1 s on a quiet Mac).
pub const TOOL_LIMIT: Duration = Duration::from_secs(15);

/// A child that ran: its status (`None` when it outlived its limit and was killed) and what it
/// wrote, read to the end (or as far as it got before it was killed).
#[derive(Debug)]
pub struct Finished {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// It outlived its limit and was killed.
    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    /// It ended by itself with exit code 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// Why [`run_captured`] has no result.
#[derive(Debug)]
pub enum Captured {
    Spawn(std::io::Error),
    TimedOut,
}

/// Runs `cmd` with stdin closed, capturing stdout and stderr, for at most `limit`; past it the
/// child is killed and [`Finished::status`] is `None`. Errs only when it cannot start.
pub fn run_within(cmd: &mut Command, limit: Duration) -> std::io::Result<Finished> {
    run(cmd, limit, None, Pipe::Stdout)
}

/// Which of a child's outputs [`run_streamed`] hands over line by line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipe {
    Stdout,
    /// For a child whose stdout is its result (`headroom run --json`) and whose stderr is the
    /// running commentary.
    Stderr,
}

/// [`run_within`] that also hands each line of the `pipe` chosen to `on` while the child runs,
/// split at `\n` or `\r` (progress meters such as rsync's rewrite one line with `\r`), trimmed,
/// blank ones left out. [`Finished`] still holds all of both outputs.
pub fn run_streamed(
    cmd: &mut Command,
    limit: Duration,
    pipe: Pipe,
    on: &mut dyn FnMut(&str),
) -> std::io::Result<Finished> {
    run(cmd, limit, Some(on), pipe)
}

fn run(
    cmd: &mut Command,
    limit: Duration,
    mut on: Option<&mut dyn FnMut(&str)>,
    pipe: Pipe,
) -> std::io::Result<Finished> {
    let yields = in_background();
    let clock = Stopwatch::for_this_thread();
    if yields {
        wait_out_hold();
    }
    #[cfg(unix)]
    if yields {
        // A group of its own, so that a hold stops its children too.
        std::os::unix::process::CommandExt::process_group(cmd, 0);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let _yielding = yields.then(|| Yielding::enter(child.id()));
    let (tx, chunks) = mpsc::channel();
    let copy = on.is_some().then_some(tx);
    let (out, err) = match pipe {
        Pipe::Stdout => (
            Drain::start(child.stdout.take(), copy),
            Drain::start(child.stderr.take(), None),
        ),
        Pipe::Stderr => (
            Drain::start(child.stdout.take(), None),
            Drain::start(child.stderr.take(), copy),
        ),
    };
    let mut lines = Lines::default();
    let mut feed = |wait: Duration, on: &mut Option<&mut dyn FnMut(&str)>| match on {
        Some(f) => {
            if let Ok(c) = chunks.recv_timeout(wait) {
                lines.push(&c, &mut **f);
                while let Ok(c) = chunks.try_recv() {
                    lines.push(&c, &mut **f);
                }
            }
        }
        None => std::thread::sleep(wait),
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            // Its limit counts only the time it could run (a hold stops it).
            Ok(None) if clock.elapsed() < limit => feed(Duration::from_millis(20), &mut on),
            // Past the deadline (or unable to wait): stop it.
            _ => {
                // Its own children first (a hung interpreter's subprocess would live on).
                kill_descendants(child.id());
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    // A process that ended by itself closed its pipes, unless a child of its own holds them.
    let grace = if status.is_some() {
        limit.saturating_sub(clock.elapsed()).max(READ_GRACE)
    } else {
        READ_GRACE
    };
    let read_until = Instant::now() + grace;
    let stdout = out.take(read_until);
    let stderr = err.take(read_until);
    if let Some(f) = on {
        while let Ok(c) = chunks.try_recv() {
            lines.push(&c, &mut *f);
        }
        lines.finish(f);
    }
    Ok(Finished {
        status,
        stdout,
        stderr,
    })
}

/// Kills (SIGKILL) every process descended from `pid`, read from the process table.
fn kill_descendants(pid: u32) {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate};
    let mut sys = sysinfo::System::new();
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, ProcessRefreshKind::nothing());
    let mut tree = vec![sysinfo::Pid::from_u32(pid)];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            sys.processes()
                .iter()
                .filter(|(_, p)| p.parent() == Some(parent))
                .map(|(child, _)| *child),
        );
        i += 1;
    }
    for p in tree.iter().skip(1) {
        if let Some(proc_) = sys.process(*p) {
            proc_.kill();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Background children, which yield to an opening window.
//
// A readiness refresh in the menu bar imports torch in every Python it finds: seconds of CPU and
// disk on a laptop's cores, at a lower priority already, yet still in the way of the popover
// opening beside it (an open pressed during the tray's start-up check took 465–499 ms against
// ~330 after it, `bench/README.md`). The children that work started are marked as background
// (each in a process group of its own), and [`hold_background`] stops them (SIGSTOP to each
// group) for a bounded while; their limits count only the time they could run. A tray that
// dies during a hold leaves nothing stopped: the orphaned groups get SIGHUP and SIGCONT from the
// kernel.

thread_local! {
    static BACKGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the children it starts (through this module, on this thread or through
/// [`spawn_alike`]) marked as background: held by [`hold_background`].
pub fn as_background<R>(f: impl FnOnce() -> R) -> R {
    let before = BACKGROUND.with(|b| b.replace(true));
    let r = f();
    BACKGROUND.with(|b| b.set(before));
    r
}

/// Whether children started on this thread now are background ones.
pub fn in_background() -> bool {
    BACKGROUND.with(std::cell::Cell::get)
}

/// `std::thread::spawn`, the new thread's children background ones when this thread's are.
pub fn spawn_alike<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let background = in_background();
    std::thread::spawn(move || if background { as_background(f) } else { f() })
}

/// The background children running, and the hold on them.
#[derive(Default)]
struct Holds {
    /// Their pids, each the id of its process group.
    groups: Vec<i32>,
    /// While held: when the hold began and when it ends at the latest.
    held: Option<(Instant, Instant)>,
    /// The time held before the current hold.
    total: Duration,
}

static HOLDS: Mutex<Holds> = Mutex::new(Holds {
    groups: Vec::new(),
    held: None,
    total: Duration::ZERO,
});

fn holds() -> std::sync::MutexGuard<'static, Holds> {
    HOLDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Holds {
    fn time_held(&self, now: Instant) -> Duration {
        self.total
            + self.held.map_or(Duration::ZERO, |(from, _)| {
                now.saturating_duration_since(from)
            })
    }

    fn signal_all(&self, sig: libc::c_int) {
        for &g in &self.groups {
            signal_group(g, sig);
        }
    }

    fn resume(&mut self, now: Instant) {
        if let Some((from, _)) = self.held.take() {
            self.total += now.saturating_duration_since(from);
            self.signal_all(libc::SIGCONT);
        }
    }
}

fn signal_group(group: i32, sig: libc::c_int) {
    // Never 0 (this process's own group) or init's.
    if group <= 1 {
        return;
    }
    #[cfg(unix)]
    // SAFETY: killpg only sends a signal, to a group this process made for its own child.
    unsafe {
        libc::killpg(group, sig);
    }
}

/// A background child, registered for holds while it runs.
struct Yielding(i32);

impl Yielding {
    fn enter(pid: u32) -> Self {
        // A pid past i32 cannot be; it would be left unheld (0 is no group: `signal_group`).
        let pid = i32::try_from(pid).unwrap_or(0);
        let mut h = holds();
        h.groups.push(pid);
        if h.held.is_some() {
            signal_group(pid, libc::SIGSTOP);
        }
        Self(pid)
    }
}

impl Drop for Yielding {
    fn drop(&mut self) {
        let mut h = holds();
        h.groups.retain(|&g| g != self.0);
    }
}

/// Stops every background child (and those started meanwhile) until [`release_background`],
/// or `at_most` from now, whichever comes first; a second hold while held only extends it.
pub fn hold_background(at_most: Duration) {
    let now = Instant::now();
    let until = now + at_most;
    let mut h = holds();
    match &mut h.held {
        Some((_, end)) => *end = (*end).max(until),
        None => {
            h.held = Some((now, until));
            h.signal_all(libc::SIGSTOP);
        }
    }
    drop(h);
    std::thread::spawn(move || {
        std::thread::sleep(at_most);
        let now = Instant::now();
        let mut h = holds();
        if h.held.is_some_and(|(_, end)| end <= now) {
            h.resume(now);
        }
    });
}

/// Returns once no hold is in force: a background child asked for during a hold is started
/// after it, not started and then stopped (a short one, `sh -c "echo …"`, could finish in the
/// moment between its start and the stop). The time waited is held time, which its limit leaves
/// out ([`Stopwatch`]).
fn wait_out_hold() {
    loop {
        let left = holds()
            .held
            .map(|(_, end)| end.saturating_duration_since(Instant::now()));
        match left {
            Some(left) if !left.is_zero() => {
                std::thread::sleep(left.min(Duration::from_millis(10)));
            }
            _ => return,
        }
    }
}

/// Ends a hold: the background children run on.
pub fn release_background() {
    holds().resume(Instant::now());
}

/// Time as a background child's limit counts it: wall time less the holds since it started.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    started: Instant,
    /// The time held before the start; `None` for plain wall time.
    held_before: Option<Duration>,
}

impl Stopwatch {
    /// From now, the holds left out.
    pub fn start() -> Self {
        let started = Instant::now();
        Self {
            started,
            held_before: Some(holds().time_held(started)),
        }
    }

    /// [`Stopwatch::start`] on a thread whose children are background ones, else
    /// [`Stopwatch::wall`].
    pub fn for_this_thread() -> Self {
        if in_background() {
            Self::start()
        } else {
            Self::wall()
        }
    }

    /// From now, wall time (a child that is not held).
    pub fn wall() -> Self {
        Self {
            started: Instant::now(),
            held_before: None,
        }
    }

    /// The time since the start, less the holds since then where they count.
    pub fn elapsed(&self) -> Duration {
        let now = Instant::now();
        let wall = now.saturating_duration_since(self.started);
        match self.held_before {
            Some(before) => wall.saturating_sub(holds().time_held(now).saturating_sub(before)),
            None => wall,
        }
    }
}

/// Bytes cut into lines at `\n` or `\r`, the unfinished tail kept for the next chunk.
#[derive(Default)]
struct Lines {
    tail: Vec<u8>,
}

impl Lines {
    fn push(&mut self, chunk: &[u8], on: &mut dyn FnMut(&str)) {
        for &b in chunk {
            if b == b'\n' || b == b'\r' {
                self.emit(on);
            } else {
                self.tail.push(b);
            }
        }
    }

    fn emit(&mut self, on: &mut dyn FnMut(&str)) {
        let line = String::from_utf8_lossy(&self.tail);
        let line = line.trim();
        if !line.is_empty() {
            on(line);
        }
        self.tail.clear();
    }

    fn finish(mut self, on: &mut dyn FnMut(&str)) {
        self.emit(on);
    }
}

/// A pipe read on a thread of its own into a buffer the caller can take at any time.
struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Drain {
    /// `copy`, when given, also gets every chunk as it is read.
    fn start<R: Read + Send + 'static>(
        pipe: Option<R>,
        copy: Option<mpsc::Sender<Vec<u8>>>,
    ) -> Self {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let sink = Arc::clone(&buf);
        std::thread::spawn(move || {
            if let Some(mut p) = pipe {
                let mut chunk = [0u8; 8192];
                while let Ok(n @ 1..) = p.read(&mut chunk) {
                    if let Ok(mut b) = sink.lock() {
                        b.extend_from_slice(&chunk[..n]);
                    }
                    if let Some(c) = &copy {
                        let _ = c.send(chunk[..n].to_vec());
                    }
                }
            }
            let _ = tx.send(());
        });
        Self { buf, done }
    }

    /// What was read once the pipe closed, or by `until`, whichever comes first.
    fn take(self, until: Instant) -> String {
        let _ = self
            .done
            .recv_timeout(until.saturating_duration_since(Instant::now()));
        let bytes = self.buf.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// [`run_within`] for callers that treat a child past its limit as no answer at all.
pub fn run_captured(
    cmd: &mut Command,
    limit: Duration,
) -> Result<(ExitStatus, String, String), Captured> {
    let f = run_within(cmd, limit).map_err(Captured::Spawn)?;
    match f.status {
        Some(status) => Ok((status, f.stdout, f.stderr)),
        None => Err(Captured::TimedOut),
    }
}

/// The standard output of an OS tool (`/usr/sbin/sysctl -n hw.memsize`), when it ran within
/// [`TOOL_LIMIT`] and succeeded; for parsers, so a missing or failing tool is "unknown".
pub fn tool_stdout(program: &str, args: &[&str]) -> Option<String> {
    let f = run_within(Command::new(program).args(args), TOOL_LIMIT).ok()?;
    f.success().then_some(f.stdout)
}

/// An OS tool's standard output followed by its standard error, whatever its exit status, when
/// it ran within [`TOOL_LIMIT`]: `sysctl` reports an unknown name on stderr, which its parser
/// reads as an answer.
pub fn tool_text(program: &str, args: &[&str]) -> Option<String> {
    let f = run_within(Command::new(program).args(args), TOOL_LIMIT).ok()?;
    (!f.timed_out()).then(|| f.stdout + &f.stderr)
}

/// A pseudo-terminal for a command whose output goes to `terminal` (Headroom's own stdout or
/// stderr, when that is a terminal): its master side to read, its slave side to hand the
/// command as stdout and stderr, sized as `terminal` is. A progress bar (Rich, tqdm, Lightning's)
/// then draws live as it would without Headroom. `None` where the stream is no terminal or no
/// pseudo-terminal can be had (the command then gets pipes).
pub fn pty_for(
    terminal: &impl std::os::fd::AsFd,
) -> Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::io::IsTerminal;
    use std::os::fd::AsRawFd;
    let fd = terminal.as_fd();
    if !fd.is_terminal() {
        return None;
    }
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ fills a winsize from a terminal's fd, which outlives the call.
    let sized = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut size) } == 0;
    let size = sized.then_some(nix::pty::Winsize {
        ws_row: size.ws_row,
        ws_col: size.ws_col,
        ws_xpixel: size.ws_xpixel,
        ws_ypixel: size.ws_ypixel,
    });
    let pty = nix::pty::openpty(size.as_ref(), None).ok()?;
    Some((pty.master, pty.slave))
}

#[cfg(test)]
mod tests {
    /// A child past its limit is killed with its own children: the hung interpreter's
    /// subprocess that `doctor --timeout` used to leave behind.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_past_its_limit_takes_its_own_children_with_it() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 60 & echo $!; wait"]);
        let f = run_within(&mut cmd, Duration::from_millis(500)).expect("ran");
        assert!(f.timed_out());
        let pid: u32 = f.stdout.trim().parse().expect("the grandchild's pid");
        let gone = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
        };
        let t0 = Instant::now();
        while !gone() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone(), "sleep {pid} outlived its parent's limit");
    }

    /// A hold stops the background children (a readiness check's interpreters, and their own
    /// children) until it is released or runs out; their limits count only the time they could
    /// run; other children are never held.
    #[cfg(target_os = "linux")]
    #[test]
    fn background_children_wait_out_a_hold_that_their_limit_does_not_count() {
        use super::*;
        let state = |pid: &str| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit(')').next()?.trim_start().chars().next())
        };
        let dir = tempfile::tempdir().expect("tmp");
        let pids = dir.path().join("pids");
        let script = format!(
            "sleep 0.5 & echo $$ $! > {}; wait $!; echo done",
            pids.display()
        );
        let t0 = Instant::now();
        let held = std::thread::spawn(move || {
            as_background(|| {
                let mut c = Command::new("/bin/sh");
                c.args(["-c", &script]);
                run_within(&mut c, Duration::from_millis(800)).expect("sh")
            })
        });
        let until = Instant::now() + Duration::from_secs(5);
        let ids = loop {
            let text = std::fs::read_to_string(&pids).unwrap_or_default();
            let ids: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
            if ids.len() == 2 || Instant::now() > until {
                break ids;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(ids.len(), 2, "the script wrote its pids");
        hold_background(Duration::from_millis(1000));
        std::thread::sleep(Duration::from_millis(100));
        for id in &ids {
            assert_eq!(state(id), Some('T'), "{id} is stopped while held");
        }
        // A child that is not background runs through the hold.
        let plain = Instant::now();
        let f = run_within(&mut sh("sleep 0.1; echo plain"), TOOL_LIMIT).expect("sh");
        assert_eq!(f.stdout, "plain\n");
        assert!(
            plain.elapsed() < Duration::from_millis(700),
            "{:?}",
            plain.elapsed()
        );
        let f = held.join().expect("joined");
        assert!(
            f.success() && f.stdout == "done\n",
            "held for 1 s, a child with a 0.8 s limit was not stopped for it: {f:?}"
        );
        assert!(
            t0.elapsed() >= Duration::from_millis(1000),
            "{:?}",
            t0.elapsed()
        );

        // One started during a hold waits for it; a release ends the hold at once.
        hold_background(Duration::from_secs(30));
        let t1 = Instant::now();
        let waiting = std::thread::spawn(|| {
            as_background(|| run_within(&mut sh("echo late"), TOOL_LIMIT).expect("sh"))
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !waiting.is_finished(),
            "a child started during the hold ran"
        );
        release_background();
        let f = waiting.join().expect("joined");
        assert_eq!(f.stdout, "late\n");
        assert!(
            (Duration::from_millis(300)..Duration::from_secs(10)).contains(&t1.elapsed()),
            "{:?}",
            t1.elapsed()
        );
    }

    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn output_and_status_of_a_child_that_ends() {
        let f = run_within(&mut sh("echo out; echo err >&2; exit 3"), TOOL_LIMIT).expect("sh");
        assert_eq!(f.status.and_then(|s| s.code()), Some(3));
        assert_eq!((f.stdout.as_str(), f.stderr.as_str()), ("out\n", "err\n"));
        assert!(!f.success() && !f.timed_out());
    }

    #[test]
    fn lines_are_handed_over_while_the_child_runs() {
        // The first line comes before the child ends: the second waits on a file only the
        // callback makes.
        let dir = tempfile::tempdir().expect("tmp");
        let go = dir.path().join("go");
        let script = format!(
            "printf 'copying\\r 10%%\\r 100%%\\n'; while [ ! -e {0} ]; do sleep 0.05; done; printf 'done'",
            go.display()
        );
        let mut seen = Vec::new();
        let f = run_streamed(
            &mut sh(&script),
            Duration::from_secs(20),
            Pipe::Stdout,
            &mut |l| {
                seen.push(l.to_owned());
                let _ = std::fs::write(&go, "");
            },
        )
        .expect("sh");
        assert!(f.success(), "{f:?}");
        assert_eq!(seen, ["copying", "10%", "100%", "done"]);
        assert_eq!(f.stdout, "copying\r 10%\r 100%\ndone");
    }

    #[test]
    fn stderr_is_handed_over_when_stdout_is_the_result() {
        let mut seen = Vec::new();
        let f = run_streamed(
            &mut sh("echo '{\"ok\": 1}'; echo 'epoch 1' >&2; echo 'epoch 2' >&2"),
            Duration::from_secs(20),
            Pipe::Stderr,
            &mut |l| seen.push(l.to_owned()),
        )
        .expect("sh");
        assert_eq!(seen, ["epoch 1", "epoch 2"]);
        assert_eq!(f.stdout, "{\"ok\": 1}\n");
        assert_eq!(f.stderr, "epoch 1\nepoch 2\n");
    }

    #[test]
    fn a_child_past_its_limit_is_killed_and_what_it_wrote_is_kept() {
        let started = Instant::now();
        let f = run_within(
            &mut sh("echo early; exec sleep 30"),
            Duration::from_millis(300),
        )
        .expect("sh");
        assert!(f.timed_out());
        assert_eq!(f.stdout, "early\n");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(
            run_captured(&mut sh("exec sleep 30"), Duration::from_millis(100)),
            Err(Captured::TimedOut)
        ));
    }

    #[test]
    fn a_grandchild_holding_the_pipe_does_not_hold_the_caller() {
        let started = Instant::now();
        let f = run_within(&mut sh("sleep 30 & echo gone"), Duration::from_secs(2)).expect("sh");
        assert!(f.success());
        assert_eq!(f.stdout, "gone\n");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn tools_that_fail_or_are_missing_are_unknown() {
        assert_eq!(
            tool_stdout("/bin/sh", &["-c", "echo 17179869184"]).as_deref(),
            Some("17179869184\n")
        );
        assert_eq!(
            tool_stdout("/bin/sh", &["-c", "echo partial; exit 1"]),
            None
        );
        assert_eq!(
            tool_stdout("/nonexistent/sysctl", &["-n", "hw.memsize"]),
            None
        );
        assert_eq!(
            tool_text("/bin/sh", &["-c", "echo a; echo 'unknown oid' >&2; exit 1"]).as_deref(),
            Some("a\nunknown oid\n")
        );
        assert!(matches!(
            run_captured(&mut Command::new("/nonexistent/python"), TOOL_LIMIT),
            Err(Captured::Spawn(_))
        ));
    }
}
