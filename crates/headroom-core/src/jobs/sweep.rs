//! A whole sweep: starts the worker, records every point in the ledger the moment it arrives,
//! restarts a worker the supervisor stopped for passing the budget (continuing from the points
//! measured), honours cancellation, and closes the run with its summary. The caller (CLI or app)
//! sees each [`Update`] as it happens and gets a [`SweepOutcome`] at the end.

use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::supervisor::{describe_exit, MemoryWatch, Output, Worker};
use crate::budget::format_bytes;
use crate::gitinfo::git_state;
use crate::ledger::{Ledger, NewRun, RunKind, RunStatus};
use crate::planner::Limit;
use crate::protocol::{
    Event, Hello, Job, Phase, Point, PointStatus, SweepRequest, SweepSummary, PROTOCOL_VERSION,
};
use crate::summary::summarize;
use crate::CoreError;

/// What happens during a sweep, in order.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
// Updates are handed to a callback one at a time and never kept in bulk: a point's size in the
// enum costs nothing that boxing it would save.
#[allow(clippy::large_enum_variant)]
pub enum Update {
    /// A worker process started (again, after a restart).
    WorkerStarted { pid: u32 },
    /// The run is in the ledger as `run_id`.
    Started { run_id: i64, hello: Hello },
    /// The worker is at `phase` of `batch`.
    Progress {
        batch: u32,
        phase: Phase,
        step: u32,
        of: u32,
    },
    /// A point was measured and recorded.
    Point { point: Point },
    /// Something worth knowing that did not stop the run.
    Warning { message: String },
}

/// An error as the caller shows it: a code to branch on and a message for people.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobError {
    pub code: crate::error::ErrorCode,
    pub message: String,
}

impl From<crate::CoreError> for JobError {
    fn from(e: crate::CoreError) -> Self {
        Self {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

/// Everything a sweep produced (the CLI's `--json` document).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepOutcome {
    /// How the run ended: `complete`, `interrupted`, `failed`, or `error` (and no `run_id`)
    /// when nothing was recorded.
    pub status: super::JobStatus,
    pub run_id: Option<i64>,
    pub ledger: String,
    pub hello: Option<Hello>,
    pub points: Vec<Point>,
    pub summary: Option<SweepSummary>,
    pub warnings: Vec<String>,
    pub error: Option<JobError>,
    /// How the last worker ended, for people (`exit code 0`, `killed by signal 9 …`).
    #[serde(skip)]
    pub worker_exit: Option<String>,
    /// The last lines the last worker wrote to stderr.
    #[serde(skip)]
    pub stderr_tail: Vec<String>,
}

impl SweepOutcome {
    /// The ledger status of the run, when one was recorded.
    pub fn run_status(&self) -> Option<RunStatus> {
        self.run_id?;
        Some(match self.status {
            super::JobStatus::Complete => RunStatus::Complete,
            super::JobStatus::Failed => RunStatus::Failed,
            _ => RunStatus::Interrupted,
        })
    }
}

#[derive(Debug, Default)]
struct CancelState {
    cancelled: AtomicBool,
    /// The running worker's pid, 0 when none: an atomic, so a signal handler may read it.
    pid: AtomicU32,
}

/// Stops a sweep from another thread: the current worker is killed and no new one starts; the
/// run is closed as interrupted with `reason`, its points kept.
#[derive(Debug, Clone)]
pub struct CancelToken {
    state: Arc<CancelState>,
    reason: Arc<str>,
}

impl CancelToken {
    /// A token whose cancellation is described as `reason` (e.g. "cancelled from the app").
    pub fn new(reason: &str) -> Self {
        Self {
            state: Arc::new(CancelState::default()),
            reason: reason.into(),
        }
    }

    /// Marks the sweep cancelled without touching the worker.
    pub fn mark(&self) {
        self.state.cancelled.store(true, Ordering::SeqCst);
    }

    /// Cancels: marks, and kills the running worker. Only atomics and kill(2), so a signal
    /// handler may call it: a SIGINT or SIGTERM sent to Headroom's own pid (not the terminal's
    /// Ctrl-C, which reaches the whole process group) stops the worker too.
    pub fn cancel(&self) {
        self.mark();
        let pid = self.state.pid.load(Ordering::SeqCst);
        if let Some(pid) = i32::try_from(pid).ok().filter(|p| *p > 0) {
            // SAFETY: kill(2) on the worker we started; the pid is cleared before it is reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::SeqCst)
    }

    pub(crate) fn set_pid(&self, pid: Option<u32>) {
        self.state.pid.store(pid.unwrap_or(0), Ordering::SeqCst);
    }
}

/// How many times a worker stopped for passing the budget is restarted.
const MAX_RESTARTS: u32 = 8;

/// The worker checks each point's peak against the budget itself and records a point past it as
/// over budget with its measurements. The supervisor is the safety net for runaway growth: it stops
/// the worker only past this hard limit, a margin above the budget, so a point that ends a little
/// over is measured and reported rather than cut short.
pub fn hard_limit(budget: u64) -> u64 {
    budget + (budget / 20).max(128 << 20)
}

enum WorkerEnd {
    Exited {
        /// `None`: the worker sent its result and was still tearing down when the sweep ended.
        status: Option<ExitStatus>,
        stderr_tail: Vec<String>,
        garbage: Vec<String>,
    },
    OverBudget {
        batch: Option<u32>,
        rss: u64,
    },
}

/// Where workers run: this machine, or a remote host over `ssh` (same protocol on stdout).
#[derive(Debug, Clone)]
pub enum Launcher {
    Local(std::path::PathBuf),
    Remote {
        profile: crate::remote::HostProfile,
        timeout: std::time::Duration,
    },
}

impl Launcher {
    fn command(&self) -> Result<(std::process::Command, String), CoreError> {
        match self {
            Self::Local(exe) => {
                let mut c = std::process::Command::new(exe);
                c.arg("worker");
                Ok((c, exe.display().to_string()))
            }
            Self::Remote { profile, timeout } => {
                let mut c = crate::remote::check::ssh_command(profile, *timeout)?;
                let hr = crate::remote::check::remote_headroom(profile);
                c.arg(&profile.name)
                    .arg("--")
                    .arg(format!("{} worker", crate::remote::check::sh_quote(&hr)));
                Ok((c, format!("{hr} on {} (ssh)", profile.name)))
            }
        }
    }

    /// The ledger's `host` for runs started here: this machine's name, or the profile's.
    pub fn host(&self) -> String {
        match self {
            Self::Local(_) => super::hostname(),
            Self::Remote { profile, .. } => profile.name.clone(),
        }
    }

    /// The remote host's profile, for a sweep over ssh.
    pub fn profile(&self) -> Option<&crate::remote::HostProfile> {
        self.remote()
    }

    fn remote(&self) -> Option<&crate::remote::HostProfile> {
        match self {
            Self::Local(_) => None,
            Self::Remote { profile, .. } => Some(profile),
        }
    }
}

struct Session<'a> {
    launcher: &'a Launcher,
    req: &'a SweepRequest,
    ledger: &'a Ledger,
    cancel: &'a CancelToken,
    on: &'a mut dyn FnMut(&Update),
    out: SweepOutcome,
}

impl Session<'_> {
    fn run_worker(&mut self) -> Result<WorkerEnd, CoreError> {
        let mut req = self.req.clone();
        req.prior.clone_from(&self.out.points);
        let (cmd, what) = self.launcher.command()?;
        let mut worker = Worker::start_command(cmd, &what, &Job::Sweep(req.clone()))?;
        self.cancel.set_pid(Some(worker.pid()));
        if self.cancel.is_cancelled() {
            self.cancel.cancel();
        }
        (self.on)(&Update::WorkerStarted { pid: worker.pid() });
        let mut watch: Option<MemoryWatch> = None;
        let mut busy: Option<crate::gpu_busy::BusySampler> = None;
        // What else ran while each point was timed (a remote worker's machine is not this one).
        let mut load = self
            .launcher
            .remote()
            .is_none()
            .then(crate::load::OtherLoad::new);
        // The machine's state read through the sweep (thermal, power, energy); each point keeps
        // the span of its steady steps.
        let mut conditions: Option<crate::conditions::ConditionLog> = None;
        let (mut steady_from, mut timed_from) = (0.0, 0.0);
        let mut told_unavailable = false;
        let mut last_phase = None;
        let mut current = None;
        let mut garbage = Vec::new();
        while let Some(out) = worker.next_output() {
            let event = match out {
                Output::Event(e) => *e,
                Output::Garbage(line) => {
                    garbage.push(line);
                    continue;
                }
            };
            match event {
                Event::Hello(h) => {
                    // On the CPU the budget is the worker's own memory: watch it (a remote
                    // worker's memory is not a local process's; its own budget check stands).
                    if h.device == "cpu" && self.launcher.remote().is_none() {
                        watch = Some(worker.watch_memory(hard_limit(h.budget_bytes)));
                    }
                    busy = crate::gpu_busy::BusySampler::for_device(&h.device);
                    if let Some(l) = load.as_mut() {
                        l.watch_device(&h.device);
                    }
                    if self.launcher.remote().is_none() {
                        conditions = Some(crate::conditions::ConditionLog::start(
                            Some(&h.device),
                            crate::conditions::INTERVAL,
                        ));
                    }
                    self.on_hello(h)?;
                }
                Event::Progress {
                    batch,
                    phase,
                    step,
                    of,
                } => {
                    // The rest of the machine is read from the point's first event on: the
                    // reading scans every process, which on a two-core laptop would take CPU
                    // from the timed steps themselves if it were started among them.
                    if current != Some(batch) {
                        if let Some(l) = load.as_mut() {
                            l.start();
                        }
                    }
                    current = Some(batch);
                    // The conditions and the power are read through the point's steady steps:
                    // from the end of its first (which allocates and picks kernels; its first
                    // warm-up event comes at once after it) to its end. Those steps run the same
                    // work as the timed ones, and a counter that moves every 0.1 s needs their
                    // length: the timed steps alone are a quarter second, and timing them 0.6 s
                    // for the counter's sake cost a built-in sweep 47 % on an H100.
                    // Nothing here waits for a reading: one is asked for at the start of the
                    // steady steps and one at the start of the timed ones, and the span ends
                    // when the point does, once the second has come (it has, but for points
                    // timed in a few milliseconds). Readings waited for at both ends took 3–7 ms
                    // of NVML calls each (on an H100) just as the worker freed and allocated
                    // for its next point, and on a Mac 0.1 s of this thread each.
                    if phase == Phase::Warmup && last_phase != Some(Phase::Warmup) {
                        steady_from = conditions.as_ref().map_or(0.0, |c| c.fine(true));
                        timed_from = steady_from;
                    }
                    // Utilisation is averaged over the timed steps of each point.
                    if phase == Phase::Timed && last_phase != Some(Phase::Timed) {
                        if let Some(b) = &busy {
                            b.reset();
                        }
                        if let Some(c) = &conditions {
                            timed_from = c.now();
                            c.ask();
                        }
                    }
                    last_phase = Some(phase);
                    (self.on)(&Update::Progress {
                        batch,
                        phase,
                        step,
                        of,
                    });
                }
                Event::Point(mut p) => {
                    if let Some(c) = &conditions {
                        c.fine(false);
                    }
                    current = None;
                    last_phase = None;
                    if p.gpu_busy.is_none() && p.status == PointStatus::Ok {
                        p.gpu_busy = busy.as_ref().and_then(crate::gpu_busy::BusySampler::mean);
                    }
                    if p.status == PointStatus::Ok {
                        let submitters = busy
                            .as_ref()
                            .map(crate::gpu_busy::BusySampler::submitters)
                            .unwrap_or_default();
                        p.load = load.as_mut().and_then(|l| l.read(&submitters));
                        p.conditions = conditions.as_ref().map(|c| {
                            c.settle(timed_from);
                            let mut span = c.span(steady_from, c.now());
                            // What this machine cannot read is said once, on the first point.
                            if told_unavailable {
                                span.unavailable.clear();
                            }
                            told_unavailable = true;
                            span
                        });
                    }
                    let warnings = p.cautions();
                    self.add_point(p)?;
                    for w in warnings {
                        self.warn(w);
                    }
                }
                Event::Warning { message } => self.warn(message),
                Event::Result(mut s) => {
                    // The worker cannot see the rest of the machine; the points here carry it.
                    crate::summary::annotate(&mut s, &self.out.points);
                    self.out.summary = Some(s);
                    // The result is a worker's last word; its stdout closes only once the
                    // process has let go of its memory (on a GPU, 0.05–0.1 s of the driver's
                    // teardown), which the answer need not wait for.
                    break;
                }
                Event::Epoch(_) | Event::Profile(_) | Event::Numerics(_) | Event::Heartbeat => {}
                Event::Error { code, message } => self.out.error = Some(JobError { code, message }),
            }
        }
        let tripped = watch.and_then(MemoryWatch::finish);
        self.cancel.set_pid(None);
        // A worker that sent its result has nothing more to say; its teardown (the GPU's memory
        // released) goes on without holding up the answer.
        let (status, stderr_tail) = if self.out.summary.is_some() && self.out.error.is_none() {
            worker.finish_after_result()
        } else {
            let (s, t) = worker.wait()?;
            (Some(s), t)
        };
        Ok(match tripped {
            Some(rss) if !self.cancel.is_cancelled() => WorkerEnd::OverBudget {
                batch: current,
                rss,
            },
            _ => WorkerEnd::Exited {
                status,
                stderr_tail,
                garbage,
            },
        })
    }

    fn warn(&mut self, message: String) {
        if !self.out.warnings.contains(&message) {
            (self.on)(&Update::Warning {
                message: message.clone(),
            });
            self.out.warnings.push(message);
        }
    }

    fn on_hello(&mut self, h: Hello) -> Result<(), CoreError> {
        if h.protocol != PROTOCOL_VERSION {
            return Err(CoreError::Worker(format!(
                "the worker speaks protocol {}, this headroom {}; reinstall headroom",
                h.protocol, PROTOCOL_VERSION
            )));
        }
        if self.out.run_id.is_some() {
            // A restarted worker of the same run.
            self.out.hello = Some(h);
            return Ok(());
        }
        let git = git_state(&std::env::current_dir().unwrap_or_default());
        let id = self.ledger.begin_run(&NewRun {
            kind: RunKind::Sweep,
            host: self.launcher.host(),
            device: h.device.clone(),
            device_name: h.device_name.clone(),
            workload: h.workload.clone(),
            dtype: Some(self.req.dtype),
            mode: Some(self.req.mode),
            libtorch: h.libtorch.clone(),
            git_commit: git.commit,
            git_dirty: git.dirty,
            budget_bytes: Some(h.budget_bytes),
            // Only MPS can fall back to the CPU; built-in workloads on CPU/CUDA cannot.
            fallback: (h.device != "mps").then_some(false),
            request_json: serde_json::to_string(self.req)?,
            owner_pid: Some(std::process::id()),
        })?;
        self.ledger
            .add_sample(id, crate::ledger::HELLO_SEQ, "hello", &h)?;
        self.out.run_id = Some(id);
        (self.on)(&Update::Started {
            run_id: id,
            hello: h.clone(),
        });
        self.out.hello = Some(h);
        Ok(())
    }

    /// Records a point in the ledger the moment it arrives (a batch measured again in the place
    /// of its first measurement).
    fn add_point(&mut self, p: Point) -> Result<(), CoreError> {
        // A batch measured again: the first measurement's warnings no longer stand.
        if p.remeasured_from.is_some() {
            if let Some(old) = self.out.points.iter().find(|q| q.batch == p.batch) {
                let gone = old.cautions();
                self.out.warnings.retain(|w| !gone.contains(w));
            }
        }
        let at = crate::protocol::upsert_point(&mut self.out.points, p.clone());
        if let Some(id) = self.out.run_id {
            let seq = u32::try_from(at).unwrap_or(u32::MAX);
            self.ledger.add_point(id, seq, &p)?;
        }
        (self.on)(&Update::Point { point: p });
        Ok(())
    }
}

/// Runs the sweep `req` with workers started from `exe`, recording it in `ledger`; `on` sees
/// every update. An error is returned only when nothing could be started or recorded; a worker
/// that fails, dies or is cancelled ends in the outcome's `status` and `error`.
pub fn run_sweep(
    exe: &Path,
    req: &SweepRequest,
    ledger: &Ledger,
    cancel: &CancelToken,
    on: &mut dyn FnMut(&Update),
) -> Result<SweepOutcome, CoreError> {
    run_sweep_on(&Launcher::Local(exe.to_owned()), req, ledger, cancel, on)
}

/// [`run_sweep`] with workers started by `launcher` (here or on a remote host over ssh). A
/// remote run is recorded under the profile's name; a dropped connection ends it `interrupted`
/// with the points received.
pub fn run_sweep_on(
    launcher: &Launcher,
    req: &SweepRequest,
    ledger: &Ledger,
    cancel: &CancelToken,
    on: &mut dyn FnMut(&Update),
) -> Result<SweepOutcome, CoreError> {
    let mut session = Session {
        launcher,
        req,
        ledger,
        cancel,
        on,
        out: SweepOutcome {
            status: super::JobStatus::Running,
            run_id: None,
            ledger: ledger.path().display().to_string(),
            hello: None,
            points: Vec::new(),
            summary: None,
            warnings: Vec::new(),
            error: None,
            worker_exit: None,
            stderr_tail: Vec::new(),
        },
    };
    let mut restarts = 0;
    // `ended`: the last worker ended on its own (status `None`: still tearing down after its
    // result); not when the supervisor gave up on it.
    let (status, stderr_tail, garbage, ended) = loop {
        match session.run_worker()? {
            WorkerEnd::Exited {
                status,
                stderr_tail,
                garbage,
            } => break (status, stderr_tail, garbage, true),
            WorkerEnd::OverBudget { batch, rss } => {
                let budget = session.out.hello.as_ref().map_or(0, |h| h.budget_bytes);
                let during = batch.map_or_else(
                    || "between two points".into(),
                    |b| format!("during batch {b}"),
                );
                let message = format!(
                    "the worker's memory reached {} {during}, past the {} budget and the supervisor's \
                     hard limit of {}; the supervisor stopped it before the machine could swap",
                    format_bytes(rss),
                    format_bytes(budget),
                    format_bytes(hard_limit(budget))
                );
                if restarts >= MAX_RESTARTS {
                    session.out.error = Some(JobError {
                        code: crate::error::ErrorCode::OverBudget,
                        message: format!(
                            "{message}; gave up after {MAX_RESTARTS} restarts — raise the budget"
                        ),
                    });
                    break (None, Vec::new(), Vec::new(), false);
                }
                restarts += 1;
                match batch {
                    Some(batch) => {
                        let mut p = Point::failed(batch, PointStatus::OverBudget, message);
                        p.peak_process_bytes = Some(rss);
                        p.peak_bytes = Some(rss);
                        session.add_point(p)?;
                    }
                    // Between two points (memory the last one left behind): no point to blame;
                    // a fresh worker starts from a clean process.
                    None => session.warn(format!("{message}; restarted the worker")),
                }
            }
        }
    };
    let mut out = session.out;
    out.worker_exit = status.as_ref().map(describe_exit);
    out.stderr_tail = stderr_tail.clone();
    let succeeded = status.map_or(ended, |s| s.success());
    let (run_status, note) = if out.summary.is_some() && succeeded && !cancel.is_cancelled() {
        (RunStatus::Complete, None)
    } else if out.error.is_some() && !cancel.is_cancelled() {
        (
            RunStatus::Failed,
            out.error.as_ref().map(|e| e.message.clone()),
        )
    } else {
        let why = if cancel.is_cancelled() {
            cancel.reason.to_string()
        } else if let (Some(p), Some(255)) = (launcher.remote(), status.and_then(|s| s.code())) {
            format!("the connection to {} ({}) dropped", p.name, p.target())
        } else {
            format!(
                "the worker {}",
                out.worker_exit.as_deref().unwrap_or("ended")
            )
        };
        let mut note = format!("{why} after {} point(s)", out.points.len());
        if let Some(last) = stderr_tail
            .iter()
            .chain(garbage.iter())
            .rev()
            .find(|l| !l.trim().is_empty())
            .filter(|_| !cancel.is_cancelled())
        {
            note.push_str(&format!("; its last words: {}", last.trim()));
        }
        out.error = Some(JobError {
            code: if cancel.is_cancelled() {
                crate::error::ErrorCode::Cancelled
            } else {
                crate::error::ErrorCode::Interrupted
            },
            message: note.clone(),
        });
        (RunStatus::Interrupted, Some(note))
    };
    if out.summary.is_none() && !out.points.is_empty() {
        // A partial answer from the points that finished.
        let budget = out.hello.as_ref().map_or(u64::MAX, |h| h.budget_bytes);
        out.summary = Some(summarize(&out.points, Limit::Error, budget));
    }
    if let Some(id) = out.run_id {
        ledger.finish_run(id, run_status, out.summary.as_ref(), note.as_deref())?;
    }
    out.status = if out.run_id.is_some() {
        run_status.into()
    } else {
        super::JobStatus::Error
    };
    Ok(out)
}
