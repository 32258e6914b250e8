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
use crate::monitor::{fallback_op, mps_op_gpu_ms, read_memory, EpochMatcher, MemoryReading};
use crate::CoreError;

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

/// Step intervals left out before step time is judged settled: the first steps at a new
/// shape allocate memory and pick kernels.
pub const SETTLE_WARMUP: usize = 3;

/// Two windows of steps whose median step times differ by at most this share are settled.
pub const SETTLE_SPREAD: f64 = 0.05;

/// A window holds at least this many steps, and enough to last [`SETTLE_WINDOW_S`].
pub const SETTLE_MIN_STEPS: usize = 4;
pub const SETTLE_WINDOW_S: f64 = 0.5;

/// Given the times steps ended (seconds, increasing), the index of the step from which the
/// step time is settled: after [`SETTLE_WARMUP`] intervals, the last two windows of k intervals
/// (k: at least [`SETTLE_MIN_STEPS`] and [`SETTLE_WINDOW_S`] of steps, at most 64) have the same
/// median step time within [`SETTLE_SPREAD`]. Medians of windows, not single steps, so a loader
/// that stalls every few steps settles (the throughput is then measured over all the settled
/// steps, stalls included). `None`: not yet.
pub fn settled_from(at: &[f64]) -> Option<usize> {
    if at.len() < 2 {
        return None;
    }
    let iv: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
    let usable = iv.len().checked_sub(SETTLE_WARMUP)?;
    let median = crate::stats::percentile(&iv[SETTLE_WARMUP..], 50.0)?;
    if median <= 0.0 {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let k = ((SETTLE_WINDOW_S / median).ceil() as usize).clamp(SETTLE_MIN_STEPS, 64);
    if usable < 2 * k {
        return None;
    }
    let n = iv.len();
    let a = crate::stats::percentile(&iv[n - 2 * k..n - k], 50.0)?;
    let b = crate::stats::percentile(&iv[n - k..], 50.0)?;
    ((a - b).abs() <= SETTLE_SPREAD * b).then_some(n - 2 * k)
}

/// The line a script prints at the end of each training step so `run` can time its steps:
/// `headroom-step` (case ignored), alone or followed by anything.
pub fn is_step_marker(line: &str) -> bool {
    is_marker(line, "headroom-step")
}

/// The line a script prints when a step's batch is ready (after `next(loader)`, before the
/// forward pass): with step markers, it splits each step into its data and compute parts.
pub fn is_data_marker(line: &str) -> bool {
    is_marker(line, "headroom-data")
}

fn is_marker(line: &str, word: &str) -> bool {
    let l = line.trim_start();
    l.get(..word.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(word))
        && l[word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric())
}

/// `headroom-metric NAME VALUE`: a metric the script reports (a validation loss, an accuracy),
/// kept with the run so that `ledger compare` can compare two runs' results. The name is one
/// word (letters, digits, `_ . / -`), the value a number; anything after it is ignored.
pub fn metric_line(line: &str) -> Option<(String, f64)> {
    let l = line.trim_start();
    let word = "headroom-metric";
    let rest = l
        .get(..word.len())
        .filter(|h| h.eq_ignore_ascii_case(word))
        .map(|_| &l[word.len()..])?;
    if !rest.starts_with([' ', '\t', ':']) {
        return None;
    }
    let mut parts = rest
        .trim_start_matches(':')
        .split(|c: char| c.is_whitespace() || c == '=')
        .filter(|p| !p.is_empty());
    let name = parts.next()?;
    let ok_name = name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'));
    let value: f64 = parts.next()?.parse().ok()?;
    (ok_name && value.is_finite()).then(|| (name.to_owned(), value))
}

/// Parses `NAME=REGEX` (`--metric`): the regex must compile and have a group for the value.
pub fn parse_metric_spec(spec: &str) -> Result<(String, regex::Regex), CoreError> {
    let bad = |why: String| {
        CoreError::InvalidInput(format!(
            "--metric {spec:?}: {why}; write NAME=REGEX with one group for the value, e.g. --metric 'val_acc=val acc ([0-9.]+)'"
        ))
    };
    let (name, pattern) = spec
        .split_once('=')
        .ok_or_else(|| bad("no `=` between the name and the regex".into()))?;
    if name.is_empty() || metric_line(&format!("headroom-metric {name} 0")).is_none() {
        return Err(bad(format!(
            "{name:?} is not a metric name (letters, digits, _ . / -)"
        )));
    }
    let re =
        regex::Regex::new(pattern).map_err(|e| bad(format!("the regex does not compile: {e}")))?;
    if re.captures_len() < 2 {
        return Err(bad("the regex has no group for the value".into()));
    }
    Ok((name.to_owned(), re))
}

pub use crate::config::DATA_BOUND_SHARE;

/// Data and compute parts of each step, from marker times (s): for every step after the first,
/// the data part runs from the previous step marker to the last data marker before this step
/// marker, the compute part from there to the step marker. (data ms, compute ms) per step.
pub fn split_steps(step_at: &[f64], data_at: &[f64]) -> Vec<(f64, f64)> {
    step_at
        .windows(2)
        .filter_map(|w| {
            let d = data_at.iter().copied().rfind(|d| *d > w[0] && *d <= w[1])?;
            Some(((d - w[0]) * 1e3, (w[1] - d) * 1e3))
        })
        .collect()
}

pub use crate::outcome::{OpTime, WatchOutcome, MPS_PROFILE_LOG_OPTIONS};

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

fn begin(
    ledger: &Ledger,
    what: RunKind,
    command: &str,
    opts: &WatchOptions,
) -> Result<i64, CoreError> {
    let git = git_state(&run_dir(opts));
    ledger
        .begin_run(&NewRun {
            kind: what,
            host: super::hostname(),
            // Learnt from inside when the observer sees the tensors' device.
            device: "unknown".into(),
            device_name: command.chars().take(120).collect(),
            workload: command.chars().take(200).collect(),
            dtype: None,
            mode: None,
            libtorch: opts
                .torch_version
                .clone()
                .unwrap_or_else(|| "unknown".into()),
            git_commit: git.commit,
            git_dirty: git.dirty,
            budget_bytes: None,
            fallback: None,
            request_json: serde_json::to_string(
                &serde_json::json!({ "command": command, "batch": opts.batch, "tag": opts.tag }),
            )?,
            owner_pid: Some(std::process::id()),
        })
        .and_then(|id| {
            ledger.add_sample(
                id,
                crate::ledger::THRESHOLDS_SEQ,
                "thresholds",
                &opts.thresholds,
            )?;
            Ok(id)
        })
}

/// The folder a command runs in.
fn run_dir(opts: &WatchOptions) -> std::path::PathBuf {
    opts.dir
        .clone()
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default())
}

/// Samples `pid` every `interval` until it is gone or `stop` is set, sending readings.
fn sampler(pid: u32, interval: Duration, stop: Arc<AtomicBool>, tx: mpsc::SyncSender<Msg>) {
    let start = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match read_memory(pid, start.elapsed().as_secs_f64()) {
            // A reading that finds the queue full is skipped (the next comes within an
            // interval): the sampler never waits on the loop, so stopping it never hangs.
            Some(r) => match tx.try_send(Msg::Reading(r)) {
                Ok(()) | Err(mpsc::TrySendError::Full(_)) => {}
                Err(mpsc::TrySendError::Disconnected(_)) => return,
            },
            None => return,
        }
        std::thread::sleep(interval);
    }
}

struct Tally {
    run_id: i64,
    seq: u32,
    peak: u64,
    last: Option<MemoryReading>,
    readings: usize,
    epochs: Vec<EpochSample>,
    last_epoch_at: f64,
    fallback_ops: Vec<String>,
    ops: std::collections::HashMap<String, (f64, u32)>,
    busy: Option<crate::gpu_busy::BusySampler>,
    oom: bool,
    stopped_at_limit: bool,
    over_budget: bool,
    step_at: Vec<f64>,
    data_at: Vec<f64>,
    /// What the observer inside the command reported.
    obs: crate::instrument::Observation,
    /// Epoch lines matched by the default regex while the observer runs: they count only if
    /// the observer reports no epochs of its own (a training loop without a DataLoader).
    held_epochs: Vec<(EpochSample, Option<MemoryReading>, Option<f64>, f64)>,
    /// Where the epochs named in output lines stand.
    line_state: crate::monitor::LineEpochs,
    /// Epochs were recorded from output lines (the observer's are then not used).
    line_epochs: bool,
    /// Samples trained when the last epoch ended (for each epoch's throughput).
    samples_at_epoch: f64,
    interrupted: bool,
    /// The step from which step time settled (see [`settled_from`]).
    window: Option<usize>,
    /// The metrics reported so far, the last value of each.
    metrics: std::collections::BTreeMap<String, f64>,
}

/// What reading the command's lines needs.
struct LineContext<'a> {
    matcher: &'a EpochMatcher,
    pid: u32,
    started: Instant,
    /// The start in seconds since the Unix epoch (the observer's clock).
    started_wall: f64,
    run_id: i64,
    /// Epoch lines wait for the observer's epochs (see [`Tally::held_epochs`]).
    hold_epoch_lines: bool,
    /// `--metric` regexes.
    metrics: &'a [(String, regex::Regex)],
}

impl Tally {
    /// One message from the readers or the sampler.
    fn take(&mut self, msg: Msg, ledger: &Ledger, cx: &LineContext<'_>) -> Result<(), CoreError> {
        match msg {
            Msg::Reading(r) => self.reading(ledger, r),
            Msg::Line { line, at } => self.line(&line, at, ledger, cx),
            Msg::Event(ev) => self.event(ev, ledger, cx),
        }
    }

    /// An event from the observer.
    fn event(
        &mut self,
        ev: crate::instrument::Event,
        ledger: &Ledger,
        cx: &LineContext<'_>,
    ) -> Result<(), CoreError> {
        if let crate::instrument::Event::Stall {
            waited_s,
            workers,
            alive,
            step,
            ..
        } = &ev
        {
            let stall = crate::instrument::LoaderStall {
                after_step: *step,
                waited_s: *waited_s,
                workers: *workers,
                alive: *alive,
                ended: false,
            };
            let _ = writeln!(
                std::io::stderr(),
                "headroom: the DataLoader may hang: {}. {}",
                stall.describe(),
                crate::instrument::stall_triage(
                    &stall,
                    self.obs
                        .observed
                        .loader
                        .as_ref()
                        .and_then(|l| l.start_method.as_deref())
                        .or(self.obs.observed.start_method.as_deref())
                )
            );
        }
        let Some(e) = self.obs.take(ev, cx.started_wall) else {
            return Ok(());
        };
        // Epochs already taken from the output (before any optimizer step) stay the run's.
        if cx.matcher.is_given() || self.line_epochs {
            return Ok(());
        }
        let now = cx.started.elapsed().as_secs_f64();
        let reading = read_memory(cx.pid, now).or_else(|| self.last.clone());
        let device = e.mem.as_ref().filter(|m| m.device != "cpu");
        let samples = self.obs.samples_so_far();
        // Each pass is timed from its start (the first from its first batch, not the
        // interpreter's start).
        let seconds = e.at - e.start.unwrap_or(self.last_epoch_at).min(e.at);
        let s = EpochSample {
            epoch: self.epochs.len() as u32 + 1,
            live_bytes: device.and_then(|m| m.allocated),
            cache_bytes: device.and_then(crate::instrument::DeviceMemory::cached),
            footprint_bytes: reading.as_ref().map(|r| r.tree_bytes),
            seconds,
            samples_per_s: (seconds > 0.0 && samples > self.samples_at_epoch)
                .then(|| (samples - self.samples_at_epoch) / seconds),
        };
        self.samples_at_epoch = samples;
        self.last_epoch_at = e.at;
        ledger.add_sample(cx.run_id, 100_000 + s.epoch, "epoch", &s)?;
        self.epochs.push(s);
        if let Some(r) = reading {
            self.reading(ledger, r)?;
        }
        Ok(())
    }

    /// A line of the command's output (already passed through), read for fallback warnings,
    /// OOMs, markers, MPS operation times and epoch boundaries.
    fn line(
        &mut self,
        line: &str,
        at: f64,
        ledger: &Ledger,
        cx: &LineContext<'_>,
    ) -> Result<(), CoreError> {
        let (t, matcher) = (self, cx.matcher);
        if let Some(op) = fallback_op(line) {
            if !t.fallback_ops.contains(&op) {
                t.fallback_ops.push(op);
            }
        }
        t.oom |= crate::failure::classify(line) == crate::protocol::PointStatus::Oom;
        if let Some((name, value)) = metric_line(line) {
            t.metrics.insert(name, value);
        }
        for (name, re) in cx.metrics {
            if let Some(v) = re
                .captures(line)
                .and_then(|c| c.get(1))
                .and_then(|m| m.as_str().parse::<f64>().ok())
                .filter(|v| v.is_finite())
            {
                t.metrics.insert(name.clone(), v);
            }
        }
        if is_step_marker(line) {
            t.step_at.push(at);
        } else if is_data_marker(line) {
            t.data_at.push(at);
        }
        if let Some((op, ms)) = mps_op_gpu_ms(line) {
            let e = t.ops.entry(op).or_default();
            e.0 += ms;
            e.1 += 1;
        }
        // Once the observer has reported epochs, the lines are not needed; once torch is loaded
        // in the program (the observer's hello) they wait, since its DataLoader passes are the
        // better boundary (its events arrive on another channel, so an epoch's line can come
        // before the steps that led to it); without an observer they are recorded as they come,
        // so a Headroom killed mid-run keeps them.
        let hold = cx.hold_epoch_lines
            && !matcher.is_given()
            && !t.line_epochs
            && t.obs.observed.torch_version.is_some();
        if hold && !t.epochs.is_empty() {
            return Ok(());
        }
        // An epoch ends at the line that says so or at the one that starts the next count.
        let Some((n, since)) = t.line_state.line(matcher, line, at) else {
            return Ok(());
        };
        t.line_epoch(n, since, at, hold, ledger, cx)
    }

    /// Epoch `n`, read from the output, ended `at` seconds into the run; it began at `since`
    /// (none: the first, which begins at the loop's first batch where the observer saw it).
    fn line_epoch(
        &mut self,
        n: u32,
        since: Option<f64>,
        at: f64,
        hold: bool,
        ledger: &Ledger,
        cx: &LineContext<'_>,
    ) -> Result<(), CoreError> {
        // The epoch line marks a boundary: memory now is that epoch's end. The boundary counts
        // even when no memory could be read (a command that printed it and exited before its
        // first reading): its memory is then unknown, not zero.
        let now = cx.started.elapsed().as_secs_f64();
        let reading = read_memory(cx.pid, now).or_else(|| self.last.clone());
        let s = EpochSample {
            epoch: n,
            live_bytes: None,
            cache_bytes: None,
            footprint_bytes: reading.as_ref().map(|r| r.tree_bytes),
            seconds: at - since.or(self.obs.observed.began_s).unwrap_or(0.0).min(at),
            samples_per_s: None,
        };
        // Held lines wait for the observer's epochs, which time the run's epochs when it has
        // any (they arrive on another channel, a moment before or after the line).
        if hold {
            self.held_epochs.push((s, reading, since, at));
            return Ok(());
        }
        self.last_epoch_at = at;
        ledger.add_sample(cx.run_id, 100_000 + n, "epoch", &s)?;
        self.line_epochs = true;
        self.epochs.push(s);
        if let Some(r) = reading {
            self.reading(ledger, r)?;
        }
        Ok(())
    }

    fn new(run_id: i64) -> Self {
        Self {
            run_id,
            seq: 0,
            peak: 0,
            last: None,
            readings: 0,
            epochs: Vec::new(),
            last_epoch_at: 0.0,
            fallback_ops: Vec::new(),
            ops: std::collections::HashMap::new(),
            busy: crate::gpu_busy::BusySampler::system(),
            oom: false,
            stopped_at_limit: false,
            over_budget: false,
            step_at: Vec::new(),
            data_at: Vec::new(),
            obs: crate::instrument::Observation::default(),
            held_epochs: Vec::new(),
            line_state: crate::monitor::LineEpochs::default(),
            line_epochs: false,
            samples_at_epoch: 0.0,
            interrupted: false,
            window: None,
            metrics: std::collections::BTreeMap::new(),
        }
    }

    fn progress(&self, started: Instant) -> RunProgress<'_> {
        RunProgress {
            run_id: self.run_id,
            seconds: started.elapsed().as_secs_f64(),
            steps: u32::try_from(self.steps()).unwrap_or(u32::MAX),
            epochs: &self.epochs,
            reading: self.last.as_ref(),
            device_peak_bytes: self
                .obs
                .observed
                .peak_device_held_bytes
                .or(self.obs.observed.peak_device_bytes),
        }
    }

    /// Steps seen: the observer's, or the script's `headroom-step` lines.
    fn steps(&self) -> usize {
        self.step_at.len().max(self.obs.steps.len())
    }

    /// The observer's steps are the run's steps unless the script marks its own data stage
    /// (the markers then say what the user means by a step).
    fn observer_steps(&self) -> bool {
        !self.obs.steps.is_empty() && self.data_at.is_empty()
    }

    /// When each step ended, seconds since the start.
    fn step_times(&self) -> Vec<f64> {
        if self.observer_steps() {
            self.obs.steps.iter().map(|s| s.at).collect()
        } else {
            self.step_at.clone()
        }
    }

    fn reading(&mut self, ledger: &Ledger, r: MemoryReading) -> Result<(), CoreError> {
        self.peak = self.peak.max(r.tree_bytes);
        self.seq += 1;
        self.readings += 1;
        ledger.add_sample(self.run_id, self.seq, "memory", &r)?;
        self.last = Some(r);
        Ok(())
    }
}

/// The most lines, events and readings queued for the watching loop; at about 200 bytes each,
/// at most a few MiB.
const QUEUE: usize = 16 * 1024;

/// The longest line kept for reading (output passes through whole, as it comes).
const MAX_LINE: usize = 64 * 1024;

/// Passes a pipe of the command's output through as its bytes come (progress bars, prompts),
/// and sends its lines (ended by `\n` or `\r`, each cut at [`MAX_LINE`]) to be read.
fn pump(mut pipe: impl Read, to_stderr: bool, started: Instant, tx: &mpsc::SyncSender<Msg>) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let send = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line).into_owned();
        line.clear();
        let at = started.elapsed().as_secs_f64();
        tx.send(Msg::Line { line: text, at }).is_ok()
    };
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        let wrote = if to_stderr {
            let mut e = std::io::stderr().lock();
            e.write_all(chunk).and_then(|()| e.flush())
        } else {
            let mut o = std::io::stdout().lock();
            o.write_all(chunk).and_then(|()| o.flush())
        };
        if matches!(&wrote, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) {
            // Nobody reads Headroom's output any more (`headroom run … | head -1`), so nobody
            // reads the command's: closing this end tells it at its next write (SIGPIPE or
            // EPIPE), as the shell's pipe would have without Headroom between, and Headroom then
            // exits with the status that gives, never a silent 0.
            return;
        }
        for &b in chunk {
            if b == b'\n' || b == b'\r' {
                if !line.is_empty() && !send(&mut line) {
                    return;
                }
            } else if line.len() < MAX_LINE {
                line.push(b);
            }
        }
    }
    if !line.is_empty() {
        send(&mut line);
    }
}

/// Sends `sig` to the command: to its process group when it has its own.
/// How long a sweep's start may go without an iteration once its loop began (its first batch,
/// module call or backward) before it is stopped as one that cannot be timed.
pub const NO_ITERATION_S: f64 = 60.0;

/// [`NO_ITERATION_S`], or `HEADROOM_NO_ITERATION_S` where a test sets it shorter.
fn no_iteration_s() -> f64 {
    std::env::var("HEADROOM_NO_ITERATION_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|s: &f64| *s > 0.0)
        .unwrap_or(NO_ITERATION_S)
}

/// How long a stopped command may take to end (its handler saving a checkpoint) before it is
/// killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

fn forward(pid: u32, own_group: bool, sig: i32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) with a pid (or process group) of the child this process started.
    unsafe {
        libc::kill(if own_group { -pid } else { pid }, sig);
    }
}

/// Sends `sig` to process group `pgid` (a sweep's start, run in its own group): SIGSTOP holds
/// a start waiting at its gate while another is timed, SIGCONT lets it go on.
pub fn signal_group(pgid: u32, sig: i32) {
    forward(pgid, true, sig);
}

/// Ends what is left of process group `pgid` (a sweep's start, run in its own group: its
/// DataLoader workers, a rank) and waits up to `bound` for all of it to be gone. Returns what
/// was still there at the bound (pids and names where the system lists them).
pub fn end_group(pgid: u32, bound: Duration) -> Option<String> {
    let Ok(g) = libc::pid_t::try_from(pgid) else {
        return None;
    };
    // SAFETY: kill(2) on the process group of a child this process started in its own group.
    let alive = || unsafe { libc::kill(-g, 0) == 0 };
    if alive() {
        // SAFETY: as above.
        unsafe {
            libc::kill(-g, libc::SIGKILL);
        }
    }
    let until = Instant::now() + bound;
    while alive() {
        if Instant::now() >= until {
            let left = group_members(pgid);
            return Some(if left.is_empty() {
                format!("processes of group {pgid}")
            } else {
                left.join(", ")
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The processes of group `pgid` as `NAME (PID)`, from /proc (Linux; elsewhere none).
fn group_members(pgid: u32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (name, group) = crate::sysmem::stat_name_and_group(&stat)?;
            (group == pgid).then(|| format!("{name} ({pid})"))
        })
        .collect()
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

/// A command started and not yet watched ([`drive`] watches it). Its output passes through and
/// its memory is read meanwhile; started at a gate, it waits there before its first batch until
/// [`drive`] opens it, so its start-up can overlap another command's measurement.
pub struct Launched {
    child: std::process::Child,
    pid: u32,
    own_group: bool,
    shown: String,
    program: String,
    readers: Vec<std::thread::JoinHandle<()>>,
    sampler: std::thread::JoinHandle<()>,
    stop: Arc<AtomicBool>,
    channel: Option<crate::instrument::Channel>,
    rx: mpsc::Receiver<Msg>,
    started: Instant,
    started_wall: f64,
    gated: bool,
}

impl std::fmt::Debug for Launched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launched")
            .field("pid", &self.pid)
            .field("command", &self.shown)
            .field("gated", &self.gated)
            .finish_non_exhaustive()
    }
}

impl Launched {
    /// Where it stands before its gate.
    pub fn gate_state(&mut self) -> GateState {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return GateState::Exited;
        }
        match &self.channel {
            Some(c) if self.gated => c.gate_state(),
            _ => GateState::Starting,
        }
    }

    /// The process started.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Seconds since it was started.
    pub fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// Ends it unwatched (a start begun ahead that the sweep no longer needs): its process
    /// group is killed and nothing is recorded.
    pub fn abort(mut self) {
        forward(self.pid, self.own_group, libc::SIGKILL);
        let _ = self.child.wait();
        self.stop.store(true, Ordering::SeqCst);
        // The pipes close with the group; a reader still held open by a stray process that
        // left the group is left behind rather than waited on.
        let until = Instant::now() + Duration::from_secs(2);
        while self.readers.iter().any(|r| !r.is_finished()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.sampler.join();
    }
}

/// Starts `command` as [`run_command`] does, without watching it yet; with `gated` (and the
/// observer on), it stops before its first batch until [`drive`] opens its gate.
pub fn launch(command: &[String], opts: &WatchOptions, gated: bool) -> Result<Launched, CoreError> {
    use std::io::IsTerminal;
    use std::os::unix::process::CommandExt;
    let (program, args) = command.split_first().ok_or_else(|| {
        CoreError::InvalidInput(
            "give the command to run after --, e.g. headroom run -- python train.py".into(),
        )
    })?;
    let shown = command.join(" ");
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a signal or a stop reaches its DataLoader workers and ranks
    // too; not when it reads a terminal, where a background group could not read its prompts
    // (the terminal's Ctrl-C then reaches the command directly). A sweep's start always has
    // its own group: it must be stopped whole (its DataLoader workers too) before the next one.
    let own_group = gated || opts.settle || !std::io::stdin().is_terminal();
    if own_group {
        cmd.process_group(0);
    }
    if std::env::var_os("PYTORCH_ENABLE_MPS_FALLBACK").is_none() {
        cmd.env("PYTORCH_ENABLE_MPS_FALLBACK", "1");
    }
    // Python block-buffers a pipe: without this, markers and epoch lines would arrive in bursts
    // and their times would say nothing.
    if std::env::var_os("PYTHONUNBUFFERED").is_none() {
        cmd.env("PYTHONUNBUFFERED", "1");
    }
    if let Some(dir) = &opts.dir {
        cmd.current_dir(dir);
    }
    cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
    if opts.instrument
        && !opts
            .env
            .iter()
            .any(|(k, _)| k == crate::instrument::STALL_ENV)
    {
        cmd.env(
            crate::instrument::STALL_ENV,
            crate::instrument::DEFAULT_STALL_S.to_string(),
        );
    }
    if opts.profile_ops {
        cmd.env(
            "PYTORCH_MPS_LOG_PROFILE_INFO",
            MPS_PROFILE_LOG_OPTIONS.to_string(),
        );
    }
    // At a terminal (and not a sweep's start), the command gets a pseudo-terminal for its
    // output, so that its progress bars draw live; its lines are read from it as from pipes.
    let pty = if opts.settle || gated {
        None
    } else if opts.stdout_to_stderr {
        crate::child::pty_for(&std::io::stderr())
    } else {
        crate::child::pty_for(&std::io::stdout())
    };
    let master = match pty {
        Some((master, slave)) => match slave.try_clone() {
            Ok(copy) => {
                cmd.stdout(Stdio::from(slave)).stderr(Stdio::from(copy));
                Some(master)
            }
            Err(_) => None,
        },
        None => None,
    };
    // Bounded: a command that prints faster than its lines are read waits for them (as it
    // would at a slow terminal) instead of queueing them in Headroom's memory.
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let channel = if opts.instrument {
        let c = crate::instrument::Channel::open(tx.clone(), Msg::Event)?;
        cmd.envs(c.env());
        if gated {
            cmd.env(crate::instrument::GATE_ENV, c.gate_path());
        }
        Some(c)
    } else {
        None
    };
    let spawned = cmd.spawn();
    // The command holds the pseudo-terminal's slave side now; this process must not, or its
    // master would never read the end.
    drop(cmd);
    let mut child = spawned.map_err(|e| {
        CoreError::InvalidInput(format!(
            "cannot start {program}: {e}; check the command (is {program} on PATH?)"
        ))
    })?;
    let started = Instant::now();
    let started_wall = now_unix();
    let stop = Arc::new(AtomicBool::new(false));
    let pid = child.id();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|p| (opts.stdout_to_stderr, Box::new(p) as Box<dyn Read + Send>)),
        child
            .stderr
            .take()
            .map(|p| (true, Box::new(p) as Box<dyn Read + Send>)),
        master.map(|m| {
            (
                opts.stdout_to_stderr,
                Box::new(std::fs::File::from(m)) as Box<dyn Read + Send>,
            )
        }),
    ]
    .into_iter()
    .flatten()
    .map(|(to_stderr, pipe)| {
        let tx = tx.clone();
        std::thread::spawn(move || pump(pipe, to_stderr, started, &tx))
    })
    .collect();
    let sampler = {
        let (tx, stop) = (tx.clone(), Arc::clone(&stop));
        let interval = opts.interval;
        std::thread::spawn(move || sampler(pid, interval, stop, tx))
    };
    Ok(Launched {
        child,
        pid,
        own_group,
        shown,
        program: program.clone(),
        readers,
        sampler,
        stop,
        channel,
        rx,
        started,
        started_wall,
        gated: gated && opts.instrument,
    })
}

/// Watches a [`launch`]ed command to its end (opening its gate first), recording it in
/// `ledger` as a run; `opts.max_time` counts from here.
pub fn drive(
    launched: Launched,
    matcher: &EpochMatcher,
    opts: &WatchOptions,
    ledger: &Ledger,
    on: &mut dyn FnMut(&RunProgress<'_>),
) -> Result<WatchOutcome, CoreError> {
    let Launched {
        mut child,
        pid,
        own_group,
        shown,
        program,
        readers,
        sampler: sampler_thread,
        stop,
        channel,
        rx,
        started,
        started_wall,
        gated,
    } = launched;
    let released = Instant::now();
    let waited_s = gated.then(|| released.duration_since(started).as_secs_f64());
    if let (true, Some(c)) = (gated, &channel) {
        c.open_gate()?;
    }
    let run_id = begin(ledger, RunKind::Run, &shown, opts)?;
    let mut t = Tally::new(run_id);
    let cx = LineContext {
        matcher,
        pid,
        started,
        started_wall,
        run_id,
        hold_epoch_lines: opts.instrument,
        metrics: &opts.metrics,
    };
    let stop_command = |why: String| {
        let _ = writeln!(std::io::stderr(), "headroom: {why}");
        forward(pid, own_group, libc::SIGKILL);
    };
    let mut child_done = None;
    let (mut asked_at, mut killed_after_grace) = (None::<Instant>, false);
    let (mut told_at, mut told_epochs) = (Instant::now(), 0usize);
    // Lines, events and readings until both pipes close (the child and anything holding them
    // is done).
    while readers.iter().any(|h| !h.is_finished()) {
        if t.epochs.len() != told_epochs || told_at.elapsed() >= opts.interval {
            (told_at, told_epochs) = (Instant::now(), t.epochs.len());
            on(&t.progress(started));
        }
        let sig = opts.interrupt.swap(0, Ordering::SeqCst);
        if sig != 0 {
            t.interrupted = true;
            // At a terminal the command has the terminal's Ctrl-C already.
            if own_group || sig != libc::SIGINT {
                forward(pid, own_group, sig);
                asked_at.get_or_insert_with(Instant::now);
            }
        }
        // A command that catches the signal to save a checkpoint (Lightning does) has its
        // grace; one that does not end within it is killed, so that Stop always stops.
        if asked_at.is_some_and(|a| a.elapsed() >= STOP_GRACE)
            && child_done.is_none()
            && !killed_after_grace
        {
            killed_after_grace = true;
            stop_command(format!(
                "the command did not stop within {} s of being asked to; killing it",
                STOP_GRACE.as_secs()
            ));
        }
        let over_time = opts
            .max_time
            .filter(|l| released.elapsed() >= *l)
            .map(|l| format!("{:.0} s", l.as_secs_f64()));
        let over_steps = opts
            .max_steps
            .filter(|n| t.steps() >= *n as usize)
            .map(|n| format!("{n} steps"));
        if let Some(limit) = over_time.or(over_steps) {
            if !t.stopped_at_limit {
                t.stopped_at_limit = true;
                stop_command(format!("stopping the command at its limit of {limit}"));
            }
        }
        if opts.settle && t.window.is_none() && !t.stopped_at_limit {
            if let Some(from) = settled_from(&t.step_times()) {
                t.window = Some(from);
                t.stopped_at_limit = true;
                stop_command(format!(
                    "step time settled after {} steps; stopping the command",
                    t.steps()
                ));
            }
        }
        // A sweep's start whose loop began but gives no iteration Headroom can see is stopped
        // within a bound, not run to its end: its point says why.
        if opts.settle && !t.stopped_at_limit && t.steps() == 0 {
            let began = t.obs.observed.began_s;
            let bound = no_iteration_s();
            if began.is_some_and(|b| started.elapsed().as_secs_f64() - b > bound) {
                t.stopped_at_limit = true;
                stop_command(format!(
                    "{}, {bound:.0} s after the loop began; stopping the command",
                    crate::instrument::Observed::default().loop_shape()
                ));
            }
        }
        if let Some(budget) = opts.budget_bytes.filter(|b| t.peak > *b) {
            if !t.over_budget {
                t.over_budget = true;
                stop_command(format!(
                    "stopping the command: its processes hold {}, over the {} memory budget",
                    crate::budget::format_bytes(t.peak),
                    crate::budget::format_bytes(budget)
                ));
            }
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(msg) => t.take(msg, ledger, &cx)?,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // A command that exited while something it started holds its pipes open: the run ends
        // with the command (its group is told to stop).
        if child_done.is_none() {
            if let Ok(Some(status)) = child.try_wait() {
                child_done = Some((status, Instant::now()));
            }
        }
        if let Some((_, at)) = child_done {
            if at.elapsed() > Duration::from_secs(5) {
                if own_group {
                    forward(pid, own_group, libc::SIGKILL);
                }
                break;
            }
        }
    }
    let status = match child_done {
        Some((s, _)) => s,
        None => child
            .wait()
            .map_err(|e| CoreError::Worker(format!("wait for {program}: {e}")))?,
    };
    stop.store(true, Ordering::SeqCst);
    let _ = sampler_thread.join();
    if let Some(c) = channel {
        c.close(Duration::from_secs(2));
    }
    // Whatever arrived after the pipes closed: the last lines and events may still be queued.
    for msg in rx.try_iter() {
        t.take(msg, ledger, &cx)?;
    }
    // The epoch still counting in the output ends with a command that ran to its end.
    if status.success() && !t.stopped_at_limit && !t.interrupted {
        let at = started.elapsed().as_secs_f64();
        if let Some((n, since)) = t.line_state.finish() {
            let hold = cx.hold_epoch_lines
                && !matcher.is_given()
                && !t.line_epochs
                && t.obs.observed.torch_version.is_some();
            if !hold || t.epochs.is_empty() {
                t.line_epoch(n, since, at, hold, ledger, &cx)?;
            }
        }
    }
    // Epoch lines count when the observer saw no epochs (a loop without a DataLoader); the
    // first is timed from the loop's first batch.
    if t.epochs.is_empty() {
        let began = t.obs.observed.began_s;
        for (mut s, reading, since, at) in std::mem::take(&mut t.held_epochs) {
            s.seconds = at - since.or(began).unwrap_or(0.0).min(at);
            ledger.add_sample(run_id, 100_000 + s.epoch, "epoch", &s)?;
            t.epochs.push(s);
            if let Some(r) = reading {
                t.reading(ledger, r)?;
            }
        }
    }
    let signal = {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    };
    // Stopped at its own step or time bound is a finished run; over the budget, or stopped by
    // the user, is not.
    let success = status.success() || (t.stopped_at_limit && !t.over_budget && !t.interrupted);
    let end = Ending {
        command: shown,
        exit_code: status.code(),
        signal,
        success,
        waited_s,
    };
    finish(ledger, t, end, started, opts)
}

/// Samples process `pid` until it exits or `stop` is set.
pub fn watch_pid(
    pid: u32,
    opts: &WatchOptions,
    ledger: &Ledger,
    stop: &Arc<AtomicBool>,
    on: &mut dyn FnMut(&MemoryReading),
) -> Result<WatchOutcome, CoreError> {
    let started = Instant::now();
    let first = read_memory(pid, 0.0).ok_or_else(|| {
        CoreError::InvalidInput(format!(
            "no process {pid} to watch (or no permission to read its memory); `ps` lists the running ones"
        ))
    })?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .replace('\0', " ")
                .trim()
                .to_owned()
        })
        .unwrap_or_else(|_| format!("pid {pid}"));
    let run_id = begin(ledger, RunKind::Watch, &cmdline, opts)?;
    let mut t = Tally::new(run_id);
    on(&first);
    t.reading(ledger, first)?;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(opts.interval);
        match read_memory(pid, started.elapsed().as_secs_f64()) {
            Some(r) => {
                on(&r);
                t.reading(ledger, r)?;
            }
            None => break,
        }
    }
    let end = Ending {
        command: cmdline,
        exit_code: None,
        signal: None,
        success: true,
        waited_s: None,
    };
    finish(ledger, t, end, started, opts)
}

/// How the watched command ended.
struct Ending {
    command: String,
    exit_code: Option<i32>,
    signal: Option<i32>,
    success: bool,
    /// Seconds it waited at its gate before it was watched (see [`Launched`]).
    waited_s: Option<f64>,
}

/// Step figures: from the observer's steps where it saw any, else from `headroom-step` lines.
struct StepFigures {
    steps: usize,
    step_ms: Vec<f64>,
    samples_per_s: Option<f64>,
    data_ms: Vec<f64>,
    compute_ms: Vec<f64>,
    data_share: Option<f64>,
}

#[allow(clippy::cast_precision_loss)]
fn step_figures(t: &Tally, batch: Option<u32>) -> StepFigures {
    // The observer's steps, unless the script marks its own data stage (the markers then say
    // what the user means by it, and a loop without a DataLoader has no waits to observe).
    if t.observer_steps() {
        let step_ms = t.obs.step_ms();
        let (data_ms, data_share) = t.obs.data();
        let compute_ms = t
            .obs
            .steps
            .iter()
            .filter_map(|s| Some((s.ms? - s.data_ms).max(0.0)))
            .collect();
        return StepFigures {
            steps: t.obs.steps.len(),
            step_ms,
            samples_per_s: t.obs.samples_per_s(batch.map(u64::from)),
            data_ms,
            compute_ms,
            data_share,
        };
    }
    let step_ms: Vec<f64> = t.step_at.windows(2).map(|w| (w[1] - w[0]) * 1e3).collect();
    let split = split_steps(&t.step_at, &t.data_at);
    let (data_ms, compute_ms): (Vec<f64>, Vec<f64>) = split.iter().copied().unzip();
    let total: f64 = data_ms.iter().sum::<f64>() + compute_ms.iter().sum::<f64>();
    // Steps over the time they took, not the batch over the median step: a script that waits on
    // its data now and then is measured as it runs.
    let span = match (t.step_at.first(), t.step_at.last()) {
        (Some(a), Some(b)) if b > a => Some(b - a),
        _ => None,
    };
    StepFigures {
        steps: t.step_at.len(),
        samples_per_s: match (batch, span) {
            (Some(b), Some(span)) => Some(f64::from(b) * (t.step_at.len() - 1) as f64 / span),
            _ => None,
        },
        step_ms,
        data_share: (total > 0.0).then(|| data_ms.iter().sum::<f64>() / total),
        data_ms,
        compute_ms,
    }
}

fn finish(
    ledger: &Ledger,
    mut t: Tally,
    end: Ending,
    started: Instant,
    opts: &WatchOptions,
) -> Result<WatchOutcome, CoreError> {
    let verdict = judge(&t.epochs, &opts.thresholds);
    let first_step_s = t.step_times().first().copied();
    // A settled run is timed over its settled steps only.
    if let Some(from) = t.window {
        if t.observer_steps() {
            t.obs.steps.drain(..from);
            if let Some(first) = t.obs.steps.first_mut() {
                first.ms = None;
            }
        } else {
            t.step_at.drain(..from);
        }
    }
    let gpu_busy = t.busy.as_ref().and_then(crate::gpu_busy::BusySampler::mean);
    let mut op_times: Vec<OpTime> = t
        .ops
        .iter()
        .map(|(name, (ms, calls))| OpTime {
            name: name.clone(),
            gpu_ms: *ms,
            calls: *calls,
        })
        .collect();
    op_times.sort_by(|a, b| b.gpu_ms.total_cmp(&a.gpu_ms).then(a.name.cmp(&b.name)));
    op_times.truncate(20);
    let observed =
        (opts.instrument && t.obs.observed.torch_version.is_some()).then(|| t.obs.observed.clone());
    // The batch: the user's, the command line's, or the one the DataLoader gave.
    let batch = opts.batch.or_else(|| {
        observed
            .as_ref()
            .and_then(|o| o.batch)
            .and_then(|b| u32::try_from(b).ok())
    });
    let f = step_figures(&t, batch);
    let mut fallback_ops = t.fallback_ops.clone();
    for op in observed.iter().flat_map(|o| &o.fallback_ops) {
        if !fallback_ops.contains(op) {
            fallback_ops.push(op.clone());
        }
    }
    let torch_version = opts
        .torch_version
        .clone()
        .or_else(|| observed.as_ref().and_then(|o| o.torch_version.clone()));
    if opts.torch_version.is_none() {
        if let Some(v) = &torch_version {
            ledger.set_libtorch(t.run_id, v)?;
        }
    }
    // The device the command's tensors were on, as seen from inside, instead of "process".
    if let Some(d) = observed.as_ref().and_then(|o| o.device.as_deref()) {
        ledger.set_device(t.run_id, d)?;
    }
    let git = git_state(&run_dir(opts));
    let out = WatchOutcome {
        run_id: t.run_id,
        command: end.command,
        exit_code: end.exit_code,
        seconds: started.elapsed().as_secs_f64(),
        torch_version,
        git_commit: git.commit,
        batch,
        peak_tree_bytes: t.peak,
        fallback: !fallback_ops.is_empty(),
        fallback_ops,
        readings: t.readings,
        epochs: t.epochs,
        verdict,
        gpu_busy,
        op_times,
        oom: t.oom || observed.as_ref().is_some_and(|o| o.oom.is_some()),
        stopped_at_limit: t.stopped_at_limit,
        steps: u32::try_from(f.steps).unwrap_or(u32::MAX),
        step_ms_p50: crate::stats::percentile(&f.step_ms, 50.0),
        step_ms_p95: crate::stats::percentile(&f.step_ms, 95.0),
        step_cv: crate::stats::cv(&f.step_ms),
        samples_per_s: f.samples_per_s,
        data_ms_p50: crate::stats::percentile(&f.data_ms, 50.0),
        compute_ms_p50: crate::stats::percentile(&f.compute_ms, 50.0),
        data_share: f.data_share,
        pipeline: None,
        budget_bytes: opts.budget_bytes,
        over_budget: t.over_budget,
        signal: end.signal,
        interrupted: t.interrupted,
        observed,
        settled: t.window.is_some(),
        first_step_s,
        waited_s: end.waited_s,
        metrics: t.metrics.clone(),
    };
    let out = WatchOutcome {
        pipeline: out.pipeline_verdict(),
        ..out
    };
    let status = if t.interrupted {
        RunStatus::Interrupted
    } else if end.success {
        RunStatus::Complete
    } else {
        RunStatus::Failed
    };
    let note = match (out.over_budget, end.exit_code, end.signal) {
        (true, _, _) => format!(
            "over budget: stopped at {} of process memory, above the {} budget; {}",
            crate::budget::format_bytes(out.peak_tree_bytes),
            crate::budget::format_bytes(out.budget_bytes.unwrap_or(0)),
            out.verdict.reason
        ),
        (false, _, Some(sig)) if !t.stopped_at_limit => format!(
            "the command was {}; {}",
            describe_signal(sig),
            out.verdict.reason
        ),
        (false, Some(c), _) if c != 0 => {
            format!("the command exited with code {c}; {}", out.verdict.reason)
        }
        _ => out.verdict.reason.clone(),
    };
    ledger.finish_watch(
        t.run_id,
        status,
        &out,
        out.batch,
        out.peak_tree_bytes,
        out.fallback,
        &note,
    )?;
    Ok(out)
}

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
mod tests {
    use super::*;

    #[test]
    fn step_markers() {
        assert_eq!(
            metric_line("headroom-metric val_loss 0.412"),
            Some(("val_loss".into(), 0.412))
        );
        assert_eq!(
            metric_line("  HEADROOM-METRIC: acc/top1=0.91 (epoch 3)"),
            Some(("acc/top1".into(), 0.91))
        );
        assert_eq!(metric_line("headroom-metric loss nan"), None);
        assert_eq!(metric_line("headroom-metrics loss 1"), None);
        assert_eq!(metric_line("headroom-metric loss"), None);
        assert_eq!(metric_line("headroom-metric lo$s 1"), None);
        assert!(parse_metric_spec("acc=val acc ([0-9.]+)").is_ok());
        for bad in ["acc", "=x(1)", "acc=no group", "acc=([", "a b=(x)"] {
            let e = parse_metric_spec(bad).expect_err(bad).to_string();
            assert!(e.contains("NAME=REGEX"), "{e}");
        }
        assert!(is_step_marker("headroom-step"));
        assert!(is_step_marker("  HEADROOM-STEP loss=0.31"));
        assert!(is_step_marker("headroom-step: 12"));
        assert!(!is_step_marker("headroom-steps"));
        assert!(!is_step_marker("step 12"));
        assert!(!is_step_marker("headroom"));
        assert!(is_data_marker("headroom-data"));
        assert!(!is_data_marker("headroom-dataset"));
        assert!(!is_step_marker("headroom-data"));
    }

    #[test]
    fn steps_split_into_data_and_compute_parts() {
        // Steps end at 1.0, 1.1, 1.3, 1.4; data ready at 1.08 and 1.25; the last step has no
        // data marker and is left out, a data marker before the first step counts for nothing.
        let parts = split_steps(&[1.0, 1.1, 1.3, 1.4], &[0.5, 1.08, 1.25]);
        assert_eq!(parts.len(), 2);
        assert!((parts[0].0 - 80.0).abs() < 1e-6 && (parts[0].1 - 20.0).abs() < 1e-6);
        assert!((parts[1].0 - 150.0).abs() < 1e-6 && (parts[1].1 - 50.0).abs() < 1e-6);
        // Two data markers in one step: the last one before the step marker counts.
        let parts = split_steps(&[0.0, 1.0], &[0.2, 0.9]);
        assert!((parts[0].0 - 900.0).abs() < 1e-6, "{parts:?}");
        assert!(split_steps(&[0.0, 1.0], &[]).is_empty());
    }

    #[test]
    fn step_time_settles_on_whole_windows_after_warm_up() {
        // A slow first steps, then 100 ms steps: settled once two windows of 5 agree.
        let mut at = vec![0.0, 2.0, 2.5, 2.8];
        let mut t = 2.8;
        for _ in 0..20 {
            t += 0.1;
            at.push(t);
            if let Some(from) = settled_from(&at) {
                assert_eq!(
                    at.len() - 1 - from,
                    10,
                    "two windows of 5 steps (0.5 s each)"
                );
                assert!(from >= SETTLE_WARMUP);
                return;
            }
        }
        panic!("never settled");
    }

    #[test]
    fn a_loader_that_stalls_every_few_steps_settles_and_a_slowing_one_does_not() {
        // Every fourth step waits 300 ms for data: windows of whole periods agree.
        let mut at = vec![0.0];
        for i in 1..80 {
            let last = at[at.len() - 1];
            at.push(last + if i % 4 == 0 { 0.3 } else { 0.05 });
        }
        assert!(settled_from(&at).is_some());
        // Steps getting 3 % slower each: never settled within 5 %.
        let mut at = vec![0.0];
        let mut step = 0.1;
        for _ in 0..60 {
            step *= 1.03;
            let last = at[at.len() - 1];
            at.push(last + step);
        }
        assert!(settled_from(&at).is_none());
        assert!(settled_from(&[0.0, 1.0]).is_none());
        assert!(settled_from(&[]).is_none());
    }
}
