//! `headroom run -- CMD` and `headroom watch --pid N`: a training process watched from outside.
//! Its memory (process and tree) is sampled at a fixed interval and written to the ledger as it
//! goes; for `run`, its output passes through while epoch lines and MPS fallback warnings are
//! picked out, and at each epoch line the memory becomes an epoch sample for the leak verdict.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::epochs::{judge, EpochSample, EpochThresholds};
use crate::gitinfo::git_state;
use crate::ledger::{Ledger, NewRun, RunKind, RunStatus};
use crate::readings::{fallback_op, mps_op_gpu_ms, read_memory, EpochMatcher, MemoryReading};
use crate::CoreError;

// What `headroom run` does, one part each: reading the output (lines), summing what arrives
// (tally), starting the command (launch), the loop (drive), the ledger's side (record).
mod drive;
mod launch;
mod lines;
mod record;
mod tally;

pub use self::drive::*;
pub use self::launch::*;
pub use self::lines::*;
use self::record::*;
use self::tally::*;

/// How to watch.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub interval: Duration,
    pub thresholds: EpochThresholds,
    /// The batch size, when known (from the command line or the user).
    pub batch: Option<u32>,
    /// torch's version in the interpreter the command runs, when known.
    pub torch_version: Option<String>,
    /// Ask PyTorch's MPS profiler to log every operation with its GPU time
    /// (`PYTORCH_MPS_LOG_PROFILE_INFO`), and total them per operator (`run` only; slows MPS).
    pub profile_ops: bool,
    /// Stop the command after this long (`run` only; a sweep over the user's script bounds
    /// each combination this way).
    pub max_time: Option<Duration>,
    /// Stop the command after this many step markers (`run` only).
    pub max_steps: Option<u32>,
    /// Stop the command when its process tree holds more than this (`run` only): the
    /// supervisor of a sweep over the user's script, so a combination cannot push the machine
    /// into swap.
    pub budget_bytes: Option<u64>,
    /// Observe a Python command from inside (`crate::instrument`); `--no-instrument` turns it off.
    pub instrument: bool,
    /// Pass the command's stdout to stderr (`run --json`: stdout holds only the document).
    pub stdout_to_stderr: bool,
    /// A signal the user sent Headroom (SIGINT, SIGTERM, SIGHUP), set by the shell's handler:
    /// `run` forwards it to the command and closes the run once the command is gone.
    pub interrupt: Arc<std::sync::atomic::AtomicI32>,
    /// Stop the command once its step time has settled after warm-up ([`settled_from`]), and
    /// time only the settled steps (a sweep's point).
    pub settle: bool,
    /// The folder the command runs in (a project's); none: this process's.
    pub dir: Option<std::path::PathBuf>,
    /// Variables added to the command's environment.
    pub env: Vec<(String, String)>,
    /// Kept with the run in the ledger (the project, the sweep it belongs to).
    pub tag: Option<serde_json::Value>,
    /// Metrics read from the command's output besides `headroom-metric NAME VALUE` lines: each
    /// name with a regex whose first group is the value (`--metric val_acc='val acc ([0-9.]+)'`).
    pub metrics: Vec<(String, regex::Regex)>,
}

impl WatchOptions {
    /// For a process Headroom did not start (`headroom watch`, the app's Memory panel): only the
    /// reading interval and the leak thresholds apply.
    pub fn for_pid(interval: Duration, thresholds: EpochThresholds) -> Self {
        Self {
            interval,
            thresholds,
            batch: None,
            torch_version: None,
            profile_ops: false,
            max_time: None,
            max_steps: None,
            budget_bytes: None,
            instrument: false,
            stdout_to_stderr: false,
            interrupt: Arc::default(),
            settle: false,
            dir: None,
            env: Vec::new(),
            tag: None,
            metrics: Vec::new(),
        }
    }
}

enum Msg {
    /// A line, with the time it was read (s since the start): markers are timed as they
    /// arrive, not when the loop gets to them.
    Line {
        line: String,
        at: f64,
    },
    Reading(MemoryReading),
    /// An event from the observer inside the command.
    Event(crate::instrument::Event),
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Where a running command stands, for a live view: sent at every epoch and at most once per
/// reading interval otherwise.
#[derive(Debug, Clone, Copy)]
pub struct RunProgress<'a> {
    pub run_id: i64,
    /// The command's process (its process group's leader when it has a group of its own).
    pub pid: u32,
    /// Seconds since the command started.
    pub seconds: f64,
    /// Optimizer steps (or `headroom-step` lines) so far.
    pub steps: u32,
    /// The epochs so far, each with its memory.
    pub epochs: &'a [EpochSample],
    /// The newest memory reading of the command's process tree.
    pub reading: Option<&'a MemoryReading>,
    /// The device memory the observer saw (held by the allocator at its peak), when on an
    /// accelerator.
    pub device_peak_bytes: Option<u64>,
}

/// Runs `command` (program and arguments), passing its output through, recording it in
/// `ledger`. Sets `PYTORCH_ENABLE_MPS_FALLBACK=1` and `PYTHONUNBUFFERED=1` unless the
/// environment already sets them; with `opts.instrument`, observes a Python program from inside
/// ([`crate::instrument`]).
pub fn run_command(
    command: &[String],
    matcher: &EpochMatcher,
    opts: &WatchOptions,
    ledger: &Ledger,
) -> Result<WatchOutcome, CoreError> {
    run_command_with(command, matcher, opts, ledger, &mut |_| {})
}

/// [`run_command`], telling `on` where the command stands as it runs ([`RunProgress`]).
pub fn run_command_with(
    command: &[String],
    matcher: &EpochMatcher,
    opts: &WatchOptions,
    ledger: &Ledger,
    on: &mut dyn FnMut(&RunProgress<'_>),
) -> Result<WatchOutcome, CoreError> {
    let launched = launch(command, opts, false)?;
    drive(launched, matcher, opts, ledger, on)
}

pub use crate::instrument::GateState;

/// `killed by signal 9 (SIGKILL: …)`, as the supervisor says it of a worker.
pub fn describe_signal(sig: i32) -> String {
    use std::os::unix::process::ExitStatusExt;
    super::supervisor::describe_exit(&std::process::ExitStatus::from_raw(sig))
}

/// Whether `path` names a Python interpreter (so its torch version can be asked).
pub fn is_python(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("python"))
}

#[cfg(test)]
mod tests;
