//! Starts `headroom worker` as a child process, sends it the request, and turns its stdout into
//! protocol events. The child is killed when the handle is dropped, so a cancelled or failed
//! parent never leaves a worker running. A crash in libtorch ends the child, never the parent.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::protocol::{Event, Job};
use crate::CoreError;

fn worker_err(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::Worker(format!("{what}: {e}"))
}

/// Lines of the worker's stderr kept for error messages.
const STDERR_TAIL: usize = 20;

/// How long a worker may stay silent — no event, not even the heartbeat it writes every
/// [`crate::protocol::HEARTBEAT`] — before it is taken for hung and ended. Generous: the
/// heartbeat comes from its own thread, so only a stopped or wedged process misses it.
pub const DEFAULT_SILENCE: Duration = Duration::from_secs(60);

/// Overrides [`DEFAULT_SILENCE`], in seconds (tests use a few).
pub const SILENCE_ENV: &str = "HEADROOM_WORKER_SILENCE_S";

fn silence_limit() -> Duration {
    std::env::var(SILENCE_ENV)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| *v > 0.0)
        .map_or(DEFAULT_SILENCE, Duration::from_secs_f64)
}

/// A running worker.
#[derive(Debug)]
pub struct Worker {
    /// `None` once handed to a reaper thread (see [`Worker::finish_after_result`]).
    child: Option<Child>,
    pid: u32,
    lines: mpsc::Receiver<String>,
    stderr_tail: Arc<Mutex<Vec<String>>>,
    stderr_thread: Option<JoinHandle<()>>,
    /// Set once the child is being reaped: the watchdog must not signal a reused pid.
    reaped: Arc<AtomicBool>,
}

/// What came out of the worker's stdout.
#[derive(Debug)]
pub enum Output {
    Event(Box<Event>),
    /// A line that is not a protocol event (kept for diagnostics).
    Garbage(String),
}

impl Worker {
    /// Starts `exe worker` (`exe` is the `headroom` binary) and sends it `job`.
    pub fn start(exe: &Path, job: &Job) -> Result<Self, CoreError> {
        let mut cmd = Command::new(exe);
        cmd.arg("worker");
        Self::start_command(cmd, &exe.display().to_string(), job)
    }

    /// Starts `cmd` (a local `headroom worker`, or `ssh HOST -- headroom worker`) as the worker;
    /// `what` names it in errors.
    pub fn start_command(mut cmd: Command, what: &str, job: &Job) -> Result<Self, CoreError> {
        let exe = what;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                CoreError::Worker(format!(
                    "cannot start the worker {exe}: {e}; is headroom built (scripts/bootstrap.sh)?"
                ))
            })?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| worker_err("worker stdin", "missing"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| worker_err("worker stdout", "missing"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| worker_err("worker stderr", "missing"))?;
        let line = serde_json::to_string(job)?;
        // A worker that died before reading its request (killed, crashed while loading
        // libtorch) closed the pipe: that is not our error; its exit status, read like any
        // other worker's end, says what happened.
        match writeln!(stdin, "{line}") {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(worker_err("send the request to the worker", e));
            }
            _ => {}
        }
        drop(stdin);
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr_tail);
        let stderr_thread = std::thread::spawn(move || {
            for l in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut t) = tail.lock() {
                    t.push(l);
                    let n = t.len();
                    if n > STDERR_TAIL {
                        t.drain(..n - STDERR_TAIL);
                    }
                }
            }
        });
        // Lines are read as the worker writes them (so a parent busy elsewhere never makes a
        // healthy worker look silent, nor blocks it on a full pipe); the watchdog ends a worker
        // that writes nothing for longer than the silence limit.
        let started = Instant::now();
        let last = Arc::new(AtomicU64::new(0));
        let (tx, lines) = mpsc::channel();
        {
            let last = Arc::clone(&last);
            std::thread::spawn(move || {
                for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                    last.store(elapsed_ms(started), Ordering::SeqCst);
                    if tx.send(l).is_err() {
                        return;
                    }
                }
            });
        }
        let reaped = Arc::new(AtomicBool::new(false));
        {
            let (reaped, tail) = (Arc::clone(&reaped), Arc::clone(&stderr_tail));
            let pid = child.id();
            let limit = silence_limit();
            let tick = (limit / 4).min(Duration::from_secs(1));
            std::thread::spawn(move || loop {
                std::thread::sleep(tick);
                if reaped.load(Ordering::SeqCst) {
                    return;
                }
                let quiet = elapsed_ms(started).saturating_sub(last.load(Ordering::SeqCst));
                if u128::from(quiet) > limit.as_millis() {
                    if let Ok(mut t) = tail.lock() {
                        t.push(format!(
                            "Headroom ended the worker: no output for {:.0} s, not even its heartbeat (hung or stopped)",
                            limit.as_secs_f64()
                        ));
                    }
                    #[cfg(unix)]
                    // SAFETY: kill(2) on our own child, not yet reaped (checked above).
                    unsafe {
                        libc::kill(i32::try_from(pid).unwrap_or(i32::MAX), libc::SIGKILL);
                    }
                    return;
                }
            });
        }
        Ok(Self {
            pid: child.id(),
            child: Some(child),
            lines,
            stderr_tail,
            stderr_thread: Some(stderr_thread),
            reaped,
        })
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Watches the worker's resident memory and kills it (SIGKILL) the moment it passes `limit`
    /// bytes, so a point that would push the machine into swap is stopped instead. Stop the watch
    /// before [`Worker::wait`] reaps the child, so its pid cannot be reused under the watch.
    pub fn watch_memory(&self, limit: u64) -> MemoryWatch {
        let pid = self.pid();
        let tripped = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (Arc::clone(&tripped), Arc::clone(&stop));
        let interval = Duration::from_millis(if cfg!(target_os = "linux") { 25 } else { 200 });
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                // None: the worker has exited (a zombie has no resident set).
                let Some(rss) = crate::sysmem::pid_rss(pid) else {
                    return;
                };
                if rss > limit {
                    if let Ok(mut g) = t.lock() {
                        *g = Some(rss);
                    }
                    // SAFETY: kill(2) on our own unreaped child's pid.
                    unsafe { libc::kill(i32::try_from(pid).unwrap_or(i32::MAX), libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(interval);
            }
        });
        MemoryWatch {
            tripped,
            stop,
            thread: Some(thread),
        }
    }

    /// The next line of output, or `None` once the worker closed its stdout.
    pub fn next_output(&mut self) -> Option<Output> {
        let line = self.lines.recv().ok()?;
        Some(match Event::from_line(&line) {
            Ok(e) => Output::Event(Box::new(e)),
            Err(_) => Output::Garbage(line),
        })
    }

    /// Waits for the worker to exit; returns its status and the tail of its stderr.
    pub fn wait(mut self) -> Result<(ExitStatus, Vec<String>), CoreError> {
        self.reaped.store(true, Ordering::SeqCst);
        let status = self
            .child
            .as_mut()
            .ok_or_else(|| worker_err("wait for the worker", "already reaped"))?
            .wait()
            .map_err(|e| worker_err("wait for the worker", e))?;
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        let tail = self
            .stderr_tail
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default();
        Ok((status, tail))
    }
}

impl Worker {
    /// For a worker that has sent its result and closed its stdout, so is only tearing down (on a
    /// GPU the driver releases the device's memory, 0.1–0.2 s): its status when it is already
    /// gone; else `None`, and a thread reaps it, so the answer is not held up by the teardown.
    /// Returns the tail of its stderr so far.
    pub fn finish_after_result(mut self) -> (Option<ExitStatus>, Vec<String>) {
        self.reaped.store(true, Ordering::SeqCst);
        let tail = || {
            self.stderr_tail
                .lock()
                .map(|t| t.clone())
                .unwrap_or_default()
        };
        let Some(mut child) = self.child.take() else {
            return (None, tail());
        };
        if let Ok(Some(status)) = child.try_wait() {
            if let Some(t) = self.stderr_thread.take() {
                let _ = t.join();
            }
            return (Some(status), tail());
        }
        let stderr = self.stderr_thread.take();
        let snapshot = tail();
        std::thread::spawn(move || {
            let _ = child.wait();
            if let Some(t) = stderr {
                let _ = t.join();
            }
        });
        (None, snapshot)
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.reaped.store(true, Ordering::SeqCst);
        if let Some(child) = self.child.as_mut() {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Describes how a worker ended, for people: `exit code 2`, `killed by signal 9 (SIGKILL)`.
pub fn describe_exit(status: &ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                libc::SIGKILL => " (SIGKILL: killed, often by the OOM killer)",
                libc::SIGABRT => " (SIGABRT: libtorch aborted)",
                libc::SIGSEGV => " (SIGSEGV: crashed)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGINT => " (SIGINT: interrupted)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    status
        .code()
        .map_or_else(|| "ended".to_owned(), |c| format!("exit code {c}"))
}

/// A running watch on a worker's memory (see [`Worker::watch_memory`]).
#[derive(Debug)]
pub struct MemoryWatch {
    tripped: Arc<Mutex<Option<u64>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MemoryWatch {
    /// Ends the watch; returns the resident bytes seen when it killed the worker, if it did.
    pub fn finish(mut self) -> Option<u64> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.tripped.lock().ok().and_then(|g| *g)
    }
}

impl Drop for MemoryWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
