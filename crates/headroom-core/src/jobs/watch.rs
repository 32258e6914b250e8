//! `headroom run -- CMD` and `headroom watch --pid N`: a training process watched from outside.
//! Its memory (process and tree) is sampled at a fixed interval and written to the ledger as it
//! goes; for `run`, its output passes through while epoch lines and MPS fallback warnings are
//! picked out, and at each epoch line the memory becomes an epoch sample for the leak verdict.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::epochs::{judge, EpochSample, EpochThresholds, EpochVerdict};
use crate::gitinfo::git_state;
use crate::ledger::{Ledger, NewRun, RunStatus};
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
        }
    }
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

/// The share of step time above which a run is called data-bound.
pub const DATA_BOUND_SHARE: f64 = 0.5;

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

/// An operator's total GPU time in a run, from the MPS profiler log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpTime {
    pub name: String,
    pub gpu_ms: f64,
    pub calls: u32,
}

/// `OPERATION_INFO | INCLUDE_GPU_TIME` of PyTorch's `MPSProfiler::LogOptions`.
pub const MPS_PROFILE_LOG_OPTIONS: u32 = 1 | (1 << 7);

/// What a watched run produced: the five fields a result needs and the memory story.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchOutcome {
    pub run_id: i64,
    pub command: String,
    /// The child's exit code (`None` when killed by a signal, or for `watch`).
    pub exit_code: Option<i32>,
    pub seconds: f64,
    pub torch_version: Option<String>,
    pub git_commit: Option<String>,
    pub batch: Option<u32>,
    pub peak_tree_bytes: u64,
    /// Any operator fell back from MPS to the CPU.
    pub fallback: bool,
    pub fallback_ops: Vec<String>,
    pub readings: usize,
    pub epochs: Vec<EpochSample>,
    pub verdict: EpochVerdict,
    /// Mean GPU utilisation (0–1) over the run, where it can be sampled.
    #[serde(default)]
    pub gpu_busy: Option<f64>,
    /// GPU time per operator from the MPS profiler log, largest first (at most 20).
    #[serde(default)]
    pub op_times: Vec<OpTime>,
    /// The command's output said it ran out of memory (CUDA, MPS or the CPU allocator).
    #[serde(default)]
    pub oom: bool,
    /// Headroom stopped the command at its time or step bound.
    #[serde(default)]
    pub stopped_at_limit: bool,
    /// Step markers seen (`headroom-step` lines).
    #[serde(default)]
    pub steps: u32,
    /// Median and 95th-percentile time between step markers, ms.
    #[serde(default)]
    pub step_ms_p50: Option<f64>,
    #[serde(default)]
    pub step_ms_p95: Option<f64>,
    /// The batch over the median step time, when both are known.
    #[serde(default)]
    pub samples_per_s: Option<f64>,
    /// With `headroom-data` markers too: median data and compute part of a step, ms, and the
    /// data part's share of the summed step time (the first step left out).
    #[serde(default)]
    pub data_ms_p50: Option<f64>,
    #[serde(default)]
    pub compute_ms_p50: Option<f64>,
    #[serde(default)]
    pub data_share: Option<f64>,
    /// "data-bound: …" or "compute-bound: …" with the figures ([`Self::pipeline_verdict`]).
    #[serde(default)]
    pub pipeline: Option<String>,
    /// The memory budget it ran under, and whether the supervisor stopped it for going over.
    #[serde(default)]
    pub budget_bytes: Option<u64>,
    #[serde(default)]
    pub over_budget: bool,
}

impl WatchOutcome {
    /// The data stage takes at least [`DATA_BOUND_SHARE`] of the step time.
    pub fn data_bound(&self) -> Option<bool> {
        self.data_share.map(|s| s >= DATA_BOUND_SHARE)
    }

    /// This run as a sweep point at its batch (none when the batch is unknown): throughput from
    /// its steps, its process tree's peak, OOM or over budget as the built-in sweep records them.
    pub fn as_point(&self) -> Option<crate::protocol::Point> {
        use crate::protocol::{Point, PointStatus};
        let batch = self.batch?;
        let status = if self.over_budget {
            PointStatus::OverBudget
        } else if self.oom {
            PointStatus::Oom
        } else if self.exit_code == Some(0) || self.stopped_at_limit {
            PointStatus::Ok
        } else {
            PointStatus::Error
        };
        let mut p = Point::failed(batch, status, format!("run {}", self.run_id));
        p.samples_per_s = self.samples_per_s;
        p.step_ms_p50 = self.step_ms_p50;
        p.step_ms_p95 = self.step_ms_p95;
        p.data_ms = self.data_ms_p50;
        p.peak_process_bytes = Some(self.peak_tree_bytes);
        p.peak_bytes = Some(self.peak_tree_bytes);
        p.timed_steps = self.steps.saturating_sub(1);
        p.gpu_busy = self.gpu_busy;
        if p.status == PointStatus::Ok {
            p.message = None;
        }
        Some(p)
    }

    /// Data-bound or compute-bound, with the figures, when the script printed both markers.
    pub fn pipeline_verdict(&self) -> Option<String> {
        let (share, d, c) = (self.data_share?, self.data_ms_p50?, self.compute_ms_p50?);
        let figures = format!(
            "the data stage takes {:.0} % of step time (median {d:.1} ms data, {c:.1} ms compute; \
             data-bound from {:.0} %)",
            share * 100.0,
            DATA_BOUND_SHARE * 100.0
        );
        Some(if share >= DATA_BOUND_SHARE {
            format!(
                "data-bound: {figures} — speed up loading first (decoding, augmentation, \
                 num_workers, pin_memory, .item() every step); a faster device will not help"
            )
        } else {
            format!("compute-bound: {figures} — the device's speed is what matters here")
        })
    }
}

enum Msg {
    /// A line, with the time it was read (s since the start): markers are timed as they
    /// arrive, not when the loop gets to them.
    Line {
        line: String,
        stderr: bool,
        at: f64,
    },
    Reading(MemoryReading),
}

fn begin(
    ledger: &Ledger,
    what: &str,
    command: &str,
    opts: &WatchOptions,
) -> Result<i64, CoreError> {
    let git = git_state(&std::env::current_dir().unwrap_or_default());
    ledger
        .begin_run(&NewRun {
            kind: what.into(),
            host: super::hostname(),
            device: "process".into(),
            device_name: command.chars().take(120).collect(),
            workload: command.chars().take(200).collect(),
            dtype: "-".into(),
            mode: "-".into(),
            libtorch: opts
                .torch_version
                .clone()
                .unwrap_or_else(|| "unknown".into()),
            git_commit: git.commit,
            git_dirty: git.dirty,
            budget_bytes: None,
            fallback: None,
            request_json: serde_json::to_string(
                &serde_json::json!({ "command": command, "batch": opts.batch }),
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

/// Samples `pid` every `interval` until it is gone or `stop` is set, sending readings.
fn sampler(pid: u32, interval: Duration, stop: Arc<AtomicBool>, tx: mpsc::Sender<Msg>) {
    let start = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match read_memory(pid, start.elapsed().as_secs_f64()) {
            Some(r) => {
                if tx.send(Msg::Reading(r)).is_err() {
                    return;
                }
            }
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
}

/// What reading the command's lines needs.
struct LineContext<'a> {
    matcher: &'a EpochMatcher,
    pid: u32,
    started: Instant,
    run_id: i64,
}

impl Tally {
    /// One message from the readers or the sampler.
    fn take(&mut self, msg: Msg, ledger: &Ledger, cx: &LineContext<'_>) -> Result<(), CoreError> {
        match msg {
            Msg::Reading(r) => self.reading(ledger, r),
            Msg::Line { line, stderr, at } => self.line(&line, stderr, at, ledger, cx),
        }
    }

    /// A line of the command's output: passed through, then read for fallback warnings, MPS
    /// operation times and epoch boundaries.
    fn line(
        &mut self,
        line: &str,
        stderr: bool,
        at: f64,
        ledger: &Ledger,
        cx: &LineContext<'_>,
    ) -> Result<(), CoreError> {
        let (t, matcher, pid, started, run_id) = (self, cx.matcher, cx.pid, cx.started, cx.run_id);
        if stderr {
            let _ = writeln!(std::io::stderr(), "{line}");
        } else {
            let _ = writeln!(std::io::stdout(), "{line}");
        }
        if let Some(op) = fallback_op(line) {
            if !t.fallback_ops.contains(&op) {
                t.fallback_ops.push(op);
            }
        }
        t.oom |= crate::failure::classify(line) == crate::protocol::PointStatus::Oom;
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
        // A boundary is a new epoch number (a line repeating the last one is not).
        let fresh = |n: u32| t.epochs.last().is_none_or(|e| e.epoch != n);
        if let Some(n) = matcher.epoch(line).filter(|n| fresh(*n)) {
            // The epoch line marks a boundary: memory now is that epoch's end.
            let now = started.elapsed().as_secs_f64();
            // The boundary counts even when no memory could be read (a command that printed it
            // and exited before its first reading): its memory is then unknown, not zero.
            let reading = read_memory(pid, now).or_else(|| t.last.clone());
            let s = EpochSample {
                epoch: n,
                live_bytes: None,
                cache_bytes: None,
                footprint_bytes: reading.as_ref().map(|r| r.tree_bytes),
                seconds: now - t.last_epoch_at,
                samples_per_s: None,
            };
            t.last_epoch_at = now;
            ledger.add_sample(run_id, 100_000 + n, "epoch", &s)?;
            t.epochs.push(s);
            if let Some(r) = reading {
                t.reading(ledger, r)?;
            }
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

/// Runs `command` (program and arguments), passing its output through, recording it in
/// `ledger`. Sets `PYTORCH_ENABLE_MPS_FALLBACK=1` and `PYTHONUNBUFFERED=1` unless the
/// environment already sets them.
pub fn run_command(
    command: &[String],
    matcher: &EpochMatcher,
    opts: &WatchOptions,
    ledger: &Ledger,
) -> Result<WatchOutcome, CoreError> {
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
    if std::env::var_os("PYTORCH_ENABLE_MPS_FALLBACK").is_none() {
        cmd.env("PYTORCH_ENABLE_MPS_FALLBACK", "1");
    }
    // Python block-buffers a pipe: without this, markers and epoch lines would arrive in bursts
    // and their times would say nothing.
    if std::env::var_os("PYTHONUNBUFFERED").is_none() {
        cmd.env("PYTHONUNBUFFERED", "1");
    }
    if opts.profile_ops {
        cmd.env(
            "PYTORCH_MPS_LOG_PROFILE_INFO",
            MPS_PROFILE_LOG_OPTIONS.to_string(),
        );
    }
    let mut child = cmd.spawn().map_err(|e| {
        CoreError::InvalidInput(format!(
            "cannot start {program}: {e}; check the command (is {program} on PATH?)"
        ))
    })?;
    let run_id = begin(ledger, "run", &shown, opts)?;
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let pid = child.id();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .enumerate()
    .filter_map(|(i, p)| p.map(|p| (i == 1, p)))
    .map(|(stderr, pipe)| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let at = started.elapsed().as_secs_f64();
                if tx.send(Msg::Line { line, stderr, at }).is_err() {
                    return;
                }
            }
        })
    })
    .collect();
    let sampler_thread = {
        let (tx, stop) = (tx.clone(), Arc::clone(&stop));
        let interval = opts.interval;
        std::thread::spawn(move || sampler(pid, interval, stop, tx))
    };
    drop(tx);
    let mut t = Tally::new(run_id);
    let matcher_ctx = LineContext {
        matcher,
        pid,
        started,
        run_id,
    };
    let mut readers_left = readers.len();
    // Lines and readings until both pipes close (the child and anything holding them is done).
    while readers_left > 0 {
        let over_time = opts
            .max_time
            .filter(|l| started.elapsed() >= *l)
            .map(|l| format!("{:.0} s", l.as_secs_f64()));
        let over_steps = opts
            .max_steps
            .filter(|n| t.step_at.len() >= *n as usize)
            .map(|n| format!("{n} steps"));
        if let Some(limit) = over_time.or(over_steps) {
            if !t.stopped_at_limit {
                t.stopped_at_limit = true;
                let _ = writeln!(
                    std::io::stderr(),
                    "headroom: stopping the command at its limit of {limit}"
                );
                let _ = child.kill();
            }
        }
        if let Some(budget) = opts.budget_bytes.filter(|b| t.peak > *b) {
            if !t.over_budget {
                t.over_budget = true;
                let _ = writeln!(
                    std::io::stderr(),
                    "headroom: stopping the command: its processes hold {}, over the {} memory budget",
                    crate::budget::format_bytes(t.peak),
                    crate::budget::format_bytes(budget)
                );
                let _ = child.kill();
            }
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(msg) => t.take(msg, ledger, &matcher_ctx)?,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        readers_left = readers.iter().filter(|h| !h.is_finished()).count();
    }
    let status = child
        .wait()
        .map_err(|e| CoreError::Worker(format!("wait for {program}: {e}")))?;
    stop.store(true, Ordering::SeqCst);
    let _ = sampler_thread.join();
    // Whatever arrived after the pipes closed: the readers' last lines may still be queued.
    for msg in rx.try_iter() {
        t.take(msg, ledger, &matcher_ctx)?;
    }
    // Stopped at its own step or time bound is a finished run; over the budget is not.
    let ok = status.success() || (t.stopped_at_limit && !t.over_budget);
    finish(ledger, t, shown, status.code(), started, opts, ok)
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
    let run_id = begin(ledger, "watch", &cmdline, opts)?;
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
    finish(ledger, t, cmdline, None, started, opts, true)
}

fn finish(
    ledger: &Ledger,
    t: Tally,
    command: String,
    exit_code: Option<i32>,
    started: Instant,
    opts: &WatchOptions,
    success: bool,
) -> Result<WatchOutcome, CoreError> {
    let verdict = judge(&t.epochs, &opts.thresholds);
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
    let step_ms: Vec<f64> = t.step_at.windows(2).map(|w| (w[1] - w[0]) * 1e3).collect();
    let p50 = crate::stats::percentile(&step_ms, 50.0);
    let split = split_steps(&t.step_at, &t.data_at);
    let (data_ms, compute_ms): (Vec<f64>, Vec<f64>) = split.iter().copied().unzip();
    let total: f64 = data_ms.iter().sum::<f64>() + compute_ms.iter().sum::<f64>();
    let git = git_state(&std::env::current_dir().unwrap_or_default());
    let out = WatchOutcome {
        run_id: t.run_id,
        command,
        exit_code,
        seconds: started.elapsed().as_secs_f64(),
        torch_version: opts.torch_version.clone(),
        git_commit: git.commit,
        batch: opts.batch,
        peak_tree_bytes: t.peak,
        fallback: !t.fallback_ops.is_empty(),
        fallback_ops: t.fallback_ops,
        readings: t.readings,
        epochs: t.epochs,
        verdict,
        gpu_busy,
        op_times,
        oom: t.oom,
        stopped_at_limit: t.stopped_at_limit,
        steps: u32::try_from(t.step_at.len()).unwrap_or(u32::MAX),
        step_ms_p50: p50,
        step_ms_p95: crate::stats::percentile(&step_ms, 95.0),
        samples_per_s: match (opts.batch, p50) {
            (Some(b), Some(ms)) if ms > 0.0 => Some(f64::from(b) * 1e3 / ms),
            _ => None,
        },
        data_ms_p50: crate::stats::percentile(&data_ms, 50.0),
        compute_ms_p50: crate::stats::percentile(&compute_ms, 50.0),
        data_share: (total > 0.0).then(|| data_ms.iter().sum::<f64>() / total),
        pipeline: None,
        budget_bytes: opts.budget_bytes,
        over_budget: t.over_budget,
    };
    let out = WatchOutcome {
        pipeline: out.pipeline_verdict(),
        ..out
    };
    let status = if success {
        RunStatus::Complete
    } else {
        RunStatus::Failed
    };
    let note = match (out.over_budget, exit_code) {
        (true, _) => format!(
            "over budget: stopped at {} of process memory, above the {} budget; {}",
            crate::budget::format_bytes(out.peak_tree_bytes),
            crate::budget::format_bytes(out.budget_bytes.unwrap_or(0)),
            out.verdict.reason
        ),
        (false, Some(c)) if c != 0 => {
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
}
