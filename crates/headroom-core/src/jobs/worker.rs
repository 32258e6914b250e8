//! Starts `headroom worker` as a child process, sends it the request, and turns its stdout into
//! protocol events. The child is killed when the handle is dropped, so a cancelled or failed
//! parent never leaves a worker running. A crash in libtorch ends the child, never the parent.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::protocol::{Event, Job};
use crate::CoreError;

fn worker_err(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::Worker(format!("{what}: {e}"))
}

/// Lines of the worker's stderr kept for error messages.
const STDERR_TAIL: usize = 20;

/// A running worker.
#[derive(Debug)]
pub struct Worker {
    child: Child,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    stderr_tail: Arc<Mutex<Vec<String>>>,
    stderr_thread: Option<JoinHandle<()>>,
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
        writeln!(stdin, "{line}").map_err(|e| worker_err("send the request to the worker", e))?;
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
        Ok(Self {
            child,
            lines: BufReader::new(stdout).lines(),
            stderr_tail,
            stderr_thread: Some(stderr_thread),
        })
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
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
        let line = self.lines.next()?.ok()?;
        Some(match Event::from_line(&line) {
            Ok(e) => Output::Event(Box::new(e)),
            Err(_) => Output::Garbage(line),
        })
    }

    /// Waits for the worker to exit; returns its status and the tail of its stderr.
    pub fn wait(mut self) -> Result<(ExitStatus, Vec<String>), CoreError> {
        let status = self
            .child
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

impl Drop for Worker {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
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
