//! The Memory panel's jobs shown live: an epochs run of a built-in workload, the user's project
//! run observed from inside ("Watch my training", "Check numerics", "Profile"), or a running
//! process watched from outside — each streaming a whole [`MemorySnapshot`] with its chart
//! redrawn. The order that starts one ([`MemoryOrder`]) is checked and run here, free of Tauri,
//! so the tray process runs the popover's memory jobs (a training watched for hours goes on
//! with the popover closed and its process gone) and the app alone runs its own.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use headroom_model::epochs::{EpochSample, EpochThresholds, EpochVerdict, EpochVerdictKind};
use headroom_model::protocol::EpochsRequest;
use headroom_model::requests::{EpochsInput, WorkloadInput};
use headroom_model::samples::MemoryReading;
use headroom_report::plot::{epochs_svg, readings_svg};
use headroom_store::ledger::RunKind;
use serde::{Deserialize, Serialize};

use crate::error::{CoreError, ErrorCode};
use crate::jobs::live::Change;
use crate::jobs::sweep::{CancelToken, JobError};
use crate::jobs::watch::{WatchOptions, WatchOutcome};
use crate::jobs::{self, JobStatus};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where the memory job stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySnapshot {
    pub running: bool,
    /// `epochs` or `watch` (what it records in the ledger).
    pub kind: RunKind,
    pub title: String,
    pub run_id: Option<i64>,
    pub samples: Vec<EpochSample>,
    /// Joules per sample of each epoch in `samples`, where the machine gives its power.
    #[serde(default)]
    pub joules_per_sample: Vec<Option<f64>>,
    pub readings: Vec<MemoryReading>,
    pub verdict: Option<EpochVerdict>,
    /// Growth of the watched tree since watching began (watch only).
    pub growth: Option<f64>,
    /// The watched process crossed the leak threshold.
    pub crossed: bool,
    pub message: String,
    /// `running`, then how the job ended (`error` when it could not start).
    pub status: JobStatus,
    pub error: Option<JobError>,
    pub chart_svg: String,
    /// A wrapped run's profiler window (`Profile N iterations`), read for people.
    #[serde(default)]
    pub profile: Option<ProfileView>,
    /// A numerics check (`Check numerics`): the model against a CPU copy, read for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub numerics: Option<NumericsView>,
}

/// A numerics check as the panel shows it: the verdict, and the compared tensors that matter
/// most (those past the tolerance, else the largest errors), their errors written as people
/// read small numbers.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NumericsView {
    pub verdict: String,
    pub within: bool,
    pub rows: Vec<NumericsRow>,
}

/// One compared tensor: a layer's output, the model's output or a parameter's gradient.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NumericsRow {
    pub name: String,
    /// `layer`, `output` or `gradient`.
    pub what: String,
    /// The largest difference over the reference's largest magnitude, and absolute.
    pub rel: String,
    pub abs: String,
    pub over: bool,
}

impl NumericsView {
    /// The report's verdict and its eight largest relative errors (layers in call order first
    /// where some pass the tolerance).
    pub fn of(r: &headroom_model::numerics::NumericsReport) -> Self {
        use headroom_model::numerics::small;
        // Each compared tensor with its error, sorted on the number itself (not on its name:
        // a layer and a gradient may share one).
        let mut all: Vec<(&headroom_model::numerics::Compared, &str)> = r
            .layers
            .iter()
            .map(|c| (c, "layer"))
            .chain(r.output.iter().map(|c| (c, "output")))
            .chain(r.grads.iter().map(|c| (c, "gradient")))
            .collect();
        // Past the tolerance first (in the order they were called), then the largest errors.
        let over = |c: &headroom_model::numerics::Compared| c.rel > r.tolerance;
        all.sort_by(|(a, _), (b, _)| {
            over(b).cmp(&over(a)).then(if over(a) && over(b) {
                std::cmp::Ordering::Equal
            } else {
                b.rel.total_cmp(&a.rel)
            })
        });
        all.truncate(8);
        Self {
            verdict: r.verdict(),
            within: r.within(),
            rows: all
                .into_iter()
                .map(|(c, what)| NumericsRow {
                    name: c.name.clone(),
                    what: what.to_owned(),
                    rel: small(c.rel),
                    abs: small(c.abs),
                    over: over(c),
                })
                .collect(),
        }
    }
}

/// A profiler window as the panel shows it: one line, its top operators and its waits, and
/// the trace to open.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileView {
    pub headline: String,
    /// What the shares are of: "of the device time" or "of the window".
    pub of: String,
    pub top: Vec<headroom_model::observed::OpShare>,
    pub waits: Vec<headroom_model::observed::OpShare>,
    pub trace: Option<String>,
    pub error: Option<String>,
}

impl ProfileView {
    pub fn of(w: &headroom_model::observed::ProfileWindow) -> Self {
        Self {
            headline: format!(
                "{} iterations profiled after {} on {} ({:.2} s{})",
                w.iterations,
                w.warmup,
                w.device,
                w.window_s,
                w.cost_s()
                    .map_or_else(String::new, |c| format!("; it cost the run {c:.2} s"))
            ),
            of: if w.has_device_time() {
                "of the device time".into()
            } else {
                "of the window".into()
            },
            top: w.top(8),
            waits: w.waits(),
            trace: w.trace.clone(),
            error: w.error.clone(),
        }
    }
}

/// What the Memory panel's epochs form sends.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochsForm {
    pub workload: String,
    pub device: String,
    pub batch: u32,
    pub epochs: u32,
    pub steps_per_epoch: u32,
    /// Typed as the enum for the UI; checked by the core's one parser.
    #[cfg_attr(feature = "ts", ts(as = "headroom_model::protocol::Release"))]
    pub release: String,
    pub leak_demo: bool,
}

pub const CHART: (u32, u32) = (360, 300);
pub const LEAK_DEMO_MIB: u32 = 64;

/// Redraws the chart from the snapshot's samples (epochs) or readings (watch).
pub fn redraw(s: &mut MemorySnapshot, t: &EpochThresholds) {
    let result = if s.kind == RunKind::Watch {
        readings_svg(&s.readings, t.leak_growth, CHART.0, CHART.1)
    } else {
        epochs_svg(&s.samples, t, CHART.0, CHART.1)
    };
    match result {
        Ok(svg) => s.chart_svg = svg,
        Err(e) => s.message = e.to_string(),
    }
}

/// A wrapped run (`headroom run -- python train.py`) as the panel shows a job of its own: the
/// epochs the observer (or the epoch lines) marked, with device and process memory, the verdict
/// and the chart, and what was observed in the status line.
pub fn wrapped_snapshot(o: &WatchOutcome, t: &EpochThresholds) -> MemorySnapshot {
    let seen = o.observed.as_ref();
    let mut facts = vec![format!("{} steps", o.steps)];
    // The outcome's batch is already the user's, the command line's or the DataLoader's.
    if let Some(b) = o.batch {
        facts.push(format!("batch {b}"));
    }
    if let Some(d) = seen.and_then(|s| s.device.as_deref()) {
        facts.push(format!("on {d}"));
    }
    if let Some(ms) = o.step_ms_p50 {
        facts.push(format!("{} ms per step", headroom_model::stats::sig3(ms)));
    }
    if let Some(sps) = o.samples_per_s {
        facts.push(format!("{} samples/s", headroom_model::stats::sig3(sps)));
    }
    if let Some(j) = o.joules_per_sample() {
        facts.push(format!("{} J/sample", headroom_model::stats::sig3(j)));
    }
    if let Some(share) = o.data_share {
        facts.push(format!("data {:.0} % of the step", share * 100.0));
    }
    if let Some(peak) = seen.and_then(|s| s.peak_device_bytes) {
        facts.push(format!(
            "device peak {}",
            headroom_model::budget::format_bytes(peak)
        ));
    }
    if let Some(n) = seen.and_then(|s| s.syncs_per_step) {
        let share = seen
            .and_then(|s| s.sync_share)
            .map_or_else(String::new, |s| format!(", {:.0} % of the step", s * 100.0));
        let site = seen
            .and_then(|s| s.sync_site.as_deref())
            .map_or_else(String::new, |s| format!(" (first: {s})"));
        facts.push(format!("{n} host sync(s) per iteration{share}{site}"));
    }
    let workers = seen
        .and_then(|s| s.loader.as_ref())
        .map_or(0, |l| l.num_workers);
    if let Some(w) = o.worker_bytes.filter(|_| workers > 0) {
        facts.push(format!(
            "each of {workers} DataLoader workers holds about {}",
            headroom_model::budget::format_bytes(w)
        ));
    }
    let mut s = MemorySnapshot {
        running: false,
        kind: RunKind::Run,
        title: format!("run {}: {}", o.run_id, o.command),
        run_id: Some(o.run_id),
        samples: o.epochs.clone(),
        joules_per_sample: o
            .epochs
            .iter()
            .zip(&o.epoch_conditions)
            .map(|(e, c)| jobs::epoch_job::epoch_joules_per_sample(e, c))
            .collect(),
        verdict: Some(o.verdict.clone()),
        message: facts.join(", "),
        profile: seen.and_then(|s| s.profile.as_ref()).map(ProfileView::of),
        numerics: seen.and_then(|s| s.numerics.as_ref()).map(NumericsView::of),
        status: if o.finished() {
            JobStatus::Complete
        } else {
            JobStatus::Failed
        },
        ..MemorySnapshot::default()
    };
    redraw(&mut s, t);
    s
}

/// The configuration's `[epochs]` thresholds; its defaults when the file cannot be read (the
/// Overview says why).
pub fn configured_thresholds() -> EpochThresholds {
    headroom_store::config::load()
        .map(|c| c.epochs)
        .unwrap_or_default()
}

/// Checks the epochs form and turns it into the worker's request and the thresholds of its
/// verdict: the core's epochs input, the one check `headroom epochs` uses too.
pub fn epochs_request(
    form: &EpochsForm,
    config: &EpochThresholds,
) -> Result<(EpochsRequest, EpochThresholds), CoreError> {
    let input = EpochsInput {
        what: WorkloadInput {
            workload: form.workload.clone(),
            device: form.device.clone(),
            ..WorkloadInput::default()
        },
        batch: form.batch,
        epochs: form.epochs,
        steps_per_epoch: form.steps_per_epoch,
        release: form.release.clone(),
        leak_mib: if form.leak_demo { LEAK_DEMO_MIB } else { 0 },
        ..EpochsInput::default()
    };
    Ok(input.request(config)?)
}

/// The release at each epoch end the form asked for (empty: none), checked as `headroom run
/// --release` checks it.
pub fn release_of(release: Option<String>) -> Result<Option<String>, CoreError> {
    let values = crate::instrument::RELEASE_VALUES;
    match release.filter(|r| !r.trim().is_empty()) {
        Some(r) if !values.contains(&r.as_str()) => Err(CoreError::InvalidInput(format!(
            "release {r:?}: give one of {} (what to release at each epoch end)",
            values.join(", ")
        ))),
        r => Ok(r),
    }
}

/// A running command in a line: time, steps, memory.
fn live_line(p: &jobs::watch::RunProgress<'_>) -> String {
    let mut parts = vec![format!("{:.0} s", p.seconds), format!("{} steps", p.steps)];
    if !p.epochs.is_empty() {
        parts.push(format!("{} epochs", p.epochs.len()));
    }
    if let Some(r) = p.reading {
        parts.push(format!(
            "processes {}",
            headroom_model::budget::format_bytes(r.tree_bytes)
        ));
    }
    if let Some(d) = p.device_peak_bytes {
        parts.push(format!(
            "device peak {}",
            headroom_model::budget::format_bytes(d)
        ));
    }
    parts.join(" · ")
}
/// What starts a memory job: the epochs form, a project's command run observed ("Watch my
/// training", with its options), or a running process watched by pid. It crosses from the
/// popover's process to the tray's as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MemoryOrder {
    Epochs {
        form: EpochsForm,
    },
    Project {
        name: String,
        batch: Option<u32>,
        device: Option<String>,
        release: Option<String>,
        profile_window: Option<u32>,
        numerics: Option<String>,
    },
    Watch {
        pid: u32,
    },
}

/// A memory job's work: it fills the shared snapshot and reports each change
/// ([`Change::Moved`] when a watched process has just crossed the leak threshold), the last
/// with [`Change::Ended`].
pub type MemoryJob = Box<dyn FnOnce(&mut dyn FnMut(&MemorySnapshot, Change)) + Send + 'static>;

/// A checked order, ready to run: its snapshot (the first state in it), how it is stopped, and
/// the work.
pub struct MemoryPrepared {
    snapshot: Arc<Mutex<MemorySnapshot>>,
    cancel: CancelToken,
    stop: Arc<AtomicBool>,
    /// The flag a project's run polls: a stop reaches the command through it.
    interrupt: Option<Arc<AtomicI32>>,
    job: MemoryJob,
}

impl std::fmt::Debug for MemoryPrepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryPrepared")
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

fn refused(code: ErrorCode, message: String) -> JobError {
    JobError { code, message }
}

/// Checks `order` and makes its job; a refusal says why with a code the UI branches on.
/// Blocking: it reads the config, the projects and the ledger.
pub fn prepare(order: MemoryOrder) -> Result<MemoryPrepared, JobError> {
    match order {
        MemoryOrder::Epochs { form } => prepare_epochs(&form).map_err(JobError::from),
        MemoryOrder::Project {
            name,
            batch,
            device,
            release,
            profile_window,
            numerics,
        } => prepare_project(
            &name,
            batch,
            device,
            release,
            profile_window,
            numerics.as_deref(),
        ),
        MemoryOrder::Watch { pid } => prepare_watch(pid),
    }
}

fn first_of(s: MemorySnapshot) -> (Arc<Mutex<MemorySnapshot>>, CancelToken, Arc<AtomicBool>) {
    (
        Arc::new(Mutex::new(s)),
        CancelToken::new("stopped from the app"),
        Arc::new(AtomicBool::new(false)),
    )
}

fn prepare_epochs(form: &EpochsForm) -> Result<MemoryPrepared, CoreError> {
    let (req, t) = epochs_request(form, &configured_thresholds())?;
    let exe = jobs::worker_binary()?;
    let mut first = MemorySnapshot {
        running: true,
        kind: RunKind::Epochs,
        title: format!("{} batch {} on {}", req.workload, req.batch, req.device),
        message: "starting the worker".into(),
        status: JobStatus::Running,
        ..MemorySnapshot::default()
    };
    redraw(&mut first, &t);
    let (snapshot, cancel, stop) = first_of(first);
    let (snap, token) = (Arc::clone(&snapshot), cancel.clone());
    let job: MemoryJob = Box::new(move |on| {
        let outcome = jobs::open_ledger_for_job().and_then(|ledger| {
            jobs::epoch_job::run_epochs(&exe, &req, &t, &ledger, &token, &mut |e, c| {
                let copy = {
                    let mut s = lock(&snap);
                    s.joules_per_sample
                        .push(c.and_then(|c| jobs::epoch_job::epoch_joules_per_sample(e, c)));
                    s.samples.push(e.clone());
                    s.message = format!("epoch {} of {}", e.epoch, req.epochs);
                    redraw(&mut s, &t);
                    s.clone()
                };
                on(&copy, Change::Step);
            })
        });
        let last = {
            let mut s = lock(&snap);
            s.running = false;
            match outcome {
                Ok(o) => {
                    s.run_id = o.run_id;
                    s.status = o.status;
                    s.error = o.error;
                    s.message = o
                        .verdict
                        .as_ref()
                        .map_or_else(|| "finished".into(), |v| v.reason.clone());
                    s.verdict = o.verdict;
                }
                Err(e) => {
                    s.status = JobStatus::Error;
                    s.message = e.to_string();
                }
            }
            redraw(&mut s, &t);
            s.clone()
        };
        on(&last, Change::Ended);
    });
    Ok(MemoryPrepared {
        snapshot,
        cancel,
        stop,
        interrupt: None,
        job,
    })
}

fn prepare_project(
    name: &str,
    batch: Option<u32>,
    device: Option<String>,
    release: Option<String>,
    profile_window: Option<u32>,
    numerics: Option<&str>,
) -> Result<MemoryPrepared, JobError> {
    let release = release_of(release).map_err(JobError::from)?;
    // "Check numerics": the model against a CPU copy at its first iterations, then stopped.
    let numerics = match numerics.map(str::trim) {
        None | Some("" | "off") => None,
        Some(d @ ("f32" | "bf16" | "f16")) => Some(d.to_owned()),
        Some(other) => {
            return Err(refused(
                ErrorCode::BadRequest,
                format!("numerics in {other:?}: compare in f32, bf16 or f16"),
            ))
        }
    };
    let profile = match profile_window {
        Some(n) => crate::instrument::profile_env(n, crate::instrument::DEFAULT_PROFILE_WARMUP)
            .map_err(JobError::from)?,
        None => Vec::new(),
    };
    let project = crate::project::get(name)
        .and_then(|p| crate::project::check_usable(&p).map(|()| p))
        .map_err(JobError::from)?;
    let batch = match batch {
        Some(b) => Some(b),
        None if project.has("batch") => {
            let ledger = jobs::open_ledger().map_err(JobError::from)?;
            crate::evidence::project_batch(&ledger, name)
                .map_err(JobError::from)?
                .map(|(b, _)| b)
        }
        None => None,
    };
    if project.has("batch") && batch.is_none() {
        return Err(refused(
            ErrorCode::BadRequest,
            format!(
                "project {name}'s command has {{batch}} and no sweep of it has chosen one yet; give a batch, or run Sweep my training first"
            ),
        ));
    }
    let device = device
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(jobs::usersweep::default_device);
    let command = crate::project::fill(&project.argv(), batch, Some(device.as_str()));
    let t = configured_thresholds();
    let interrupt = Arc::new(AtomicI32::new(0));
    let mut opts = WatchOptions::for_pid(Duration::from_millis(500), t);
    opts.instrument = true;
    opts.stdout_to_stderr = true;
    opts.batch = batch;
    opts.interrupt = Arc::clone(&interrupt);
    opts.dir = Some(project.dir.clone());
    opts.tag = Some(serde_json::json!({ "project": project.name }));
    if let Some(r) = release {
        opts.env
            .push((crate::instrument::RELEASE_ENV.to_owned(), r));
    }
    opts.env.extend(profile);
    if let Some(d) = &numerics {
        opts.env.extend(crate::instrument::numerics_env(
            d,
            crate::instrument::DEFAULT_NUMERICS_TOLERANCE,
        ));
        // As `headroom numerics`: a few iterations are enough.
        opts.max_steps = Some(3);
    }
    let mut first = MemorySnapshot {
        running: true,
        kind: RunKind::Run,
        title: format!("{}: {}", project.name, command.join(" ")),
        message: "starting the command".into(),
        status: JobStatus::Running,
        ..MemorySnapshot::default()
    };
    redraw(&mut first, &t);
    let (snapshot, cancel, stop) = first_of(first);
    let snap = Arc::clone(&snapshot);
    let job: MemoryJob = Box::new(move |on| {
        let matcher = crate::readings::EpochMatcher::new(crate::readings::DEFAULT_EPOCH_PATTERN);
        let outcome = matcher.and_then(|m| {
            let ledger = jobs::open_ledger_for_job()?;
            jobs::watch::run_command_with(&command, &m, &opts, &ledger, &mut |p| {
                let copy = {
                    let mut s = lock(&snap);
                    s.run_id = Some(p.run_id);
                    let redraw_now = s.samples.len() != p.epochs.len() || s.chart_svg.is_empty();
                    s.samples = p.epochs.to_vec();
                    s.message = live_line(p);
                    if redraw_now {
                        s.verdict = (!s.samples.is_empty())
                            .then(|| headroom_model::epochs::judge(&s.samples, &t));
                        redraw(&mut s, &t);
                    }
                    s.clone()
                };
                on(&copy, Change::Step);
            })
        });
        let last = {
            let mut s = lock(&snap);
            match outcome {
                Ok(o) => {
                    let mut done = wrapped_snapshot(&o, &t);
                    if o.interrupted {
                        done.status = JobStatus::Interrupted;
                        done.message = format!("stopped by you; {}", done.message);
                    }
                    *s = done;
                }
                Err(e) => {
                    s.running = false;
                    s.status = JobStatus::Error;
                    s.message = e.to_string();
                }
            }
            s.clone()
        };
        on(&last, Change::Ended);
    });
    Ok(MemoryPrepared {
        snapshot,
        cancel,
        stop,
        interrupt: Some(interrupt),
        job,
    })
}

fn prepare_watch(pid: u32) -> Result<MemoryPrepared, JobError> {
    if crate::readings::read_memory(pid, 0.0).is_none() {
        return Err(refused(
            ErrorCode::NotFound,
            format!("process {pid} is gone (or its memory cannot be read); refresh the list"),
        ));
    }
    let t = configured_thresholds();
    let (snapshot, cancel, stop) = first_of(MemorySnapshot {
        running: true,
        kind: RunKind::Watch,
        title: format!("process {pid}"),
        message: "watching".into(),
        status: JobStatus::Running,
        ..MemorySnapshot::default()
    });
    let (snap, stopped) = (Arc::clone(&snapshot), Arc::clone(&stop));
    let job: MemoryJob = Box::new(move |on| {
        let opts = WatchOptions::for_pid(Duration::from_millis(500), t);
        let outcome = jobs::open_ledger_for_job().and_then(|ledger| {
            jobs::watch::watch_pid(pid, &opts, &ledger, &stopped, &mut |r| {
                let (copy, newly) = {
                    let mut s = lock(&snap);
                    s.readings.push(r.clone());
                    let base = s.readings.first().map_or(r.tree_bytes, |f| f.tree_bytes);
                    #[allow(clippy::cast_precision_loss)]
                    let growth = (r.tree_bytes as f64 - base as f64) / (base.max(1) as f64);
                    s.growth = Some(growth);
                    let newly = !s.crossed && growth >= t.leak_growth;
                    s.crossed |= newly;
                    s.message = format!(
                        "{:.0} s · tree {} · {:+.0} % since watching began",
                        r.t,
                        headroom_model::budget::format_bytes(r.tree_bytes),
                        growth * 100.0
                    );
                    redraw(&mut s, &t);
                    (s.clone(), newly)
                };
                on(&copy, if newly { Change::Moved } else { Change::Step });
            })
        });
        let last = {
            let mut s = lock(&snap);
            s.running = false;
            match outcome {
                Ok(o) => {
                    s.run_id = Some(o.run_id);
                    s.title.clone_from(&o.command);
                    s.status = JobStatus::Complete;
                }
                Err(e) => {
                    s.status = JobStatus::Error;
                    s.message = e.to_string();
                }
            }
            s.clone()
        };
        on(&last, Change::Ended);
    });
    Ok(MemoryPrepared {
        snapshot,
        cancel,
        stop,
        interrupt: None,
        job,
    })
}

/// The notification a change calls for, if any: a watched process that has just crossed the
/// leak threshold, or a run that ended with a leak suspected.
pub fn notice(s: &MemorySnapshot, change: Change) -> Option<(String, String)> {
    match change {
        Change::Step => None,
        Change::Moved => {
            let t = configured_thresholds();
            Some(watch_crossed(
                &s.title,
                s.growth.unwrap_or(0.0),
                t.leak_growth,
            ))
        }
        Change::Ended => s
            .verdict
            .as_ref()
            .filter(|v| v.kind == EpochVerdictKind::LeakSuspected)
            .map(|v| {
                (
                    "Headroom: memory leak suspected".to_owned(),
                    v.reason.clone(),
                )
            }),
    }
}

/// The notification for a watched process that crossed the leak threshold.
pub fn watch_crossed(title: &str, growth: f64, threshold: f64) -> (String, String) {
    (
        "Headroom: memory leak suspected".into(),
        format!(
            "{title} grew {:+.0} % since watching began, past the {:.0} % leak threshold. \
             Look for tensors kept across epochs (losses appended without .item(), caches), \
             or release memory at each epoch boundary.",
            growth * 100.0,
            threshold * 100.0
        ),
    )
}

/// The running (or last) memory job: one at a time.
#[derive(Debug, Default)]
pub struct MemorySlot(Mutex<Option<RunningMemory>>);

/// A memory job on its own thread; dropping it stops the job.
#[derive(Debug)]
struct RunningMemory {
    snapshot: Arc<Mutex<MemorySnapshot>>,
    cancel: CancelToken,
    stop: Arc<AtomicBool>,
}

impl RunningMemory {
    fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cancel.cancel();
    }

    fn is_running(&self) -> bool {
        lock(&self.snapshot).running
    }
}

impl Drop for RunningMemory {
    fn drop(&mut self) {
        if self.is_running() {
            self.stop();
        }
    }
}

impl MemorySlot {
    /// Whether a memory job (a watch, an epochs run, a project's run) runs now.
    pub fn running(&self) -> bool {
        lock(&self.0)
            .as_ref()
            .is_some_and(RunningMemory::is_running)
    }

    /// The current (or last) job's snapshot.
    pub fn snapshot(&self) -> Option<MemorySnapshot> {
        lock(&self.0).as_ref().map(|m| lock(&m.snapshot).clone())
    }

    /// Stops the running job (what was measured is kept); false when none runs.
    pub fn stop(&self) -> bool {
        let slot = lock(&self.0);
        match slot.as_ref().filter(|m| m.is_running()) {
            Some(m) => {
                m.stop();
                true
            }
            None => false,
        }
    }

    /// Stops the running job and waits up to `at_most` for it to end: a process that is
    /// quitting.
    pub fn stop_and_wait(&self, at_most: Duration) {
        if !self.stop() {
            return;
        }
        let until = std::time::Instant::now() + at_most;
        while self.running() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts `prepared` on its own thread as the slot's job: each change goes out through
    /// `on_change` (the caller keeps the last one for a later popover, [`crate::kept`], and
    /// says the notice, [`notice`]). Refused while another runs; returns the first snapshot.
    pub fn launch(
        &self,
        prepared: MemoryPrepared,
        mut on_change: impl FnMut(&MemorySnapshot, Change) + Send + 'static,
    ) -> Result<MemorySnapshot, JobError> {
        let MemoryPrepared {
            snapshot,
            cancel,
            stop,
            interrupt,
            job,
        } = prepared;
        let mut held = lock(&self.0);
        if held.as_ref().is_some_and(RunningMemory::is_running) {
            return Err(refused(
                ErrorCode::Busy,
                "a memory run is already going; stop it first".into(),
            ));
        }
        let first = lock(&snapshot).clone();
        if let Some(flag) = interrupt {
            let (stopped, snap) = (Arc::clone(&stop), Arc::clone(&snapshot));
            crate::jobs::live::relay_stop(
                move || stopped.load(Ordering::SeqCst),
                move || lock(&snap).running,
                flag,
            );
        }
        *held = Some(RunningMemory {
            snapshot,
            cancel,
            stop,
        });
        drop(held);
        std::thread::spawn(move || job(&mut on_change));
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `headroom run --json` document of a real resnet50 run on the H200 (bench/results).
    #[test]
    fn a_wrapped_run_is_shown_with_its_epochs_and_what_was_observed() {
        let text = include_str!(
            "../../../../bench/results/observer-2026-12-01/observed-resnet50-h200.json"
        );
        let o: WatchOutcome = serde_json::from_str(text).expect("a run's document");
        let s = wrapped_snapshot(&o, &EpochThresholds::default());
        assert_eq!(s.kind, RunKind::Run);
        assert_eq!(s.run_id, Some(o.run_id));
        assert!(
            s.title.starts_with(&format!("run {}: python3 ", o.run_id)),
            "{}",
            s.title
        );
        assert_eq!(s.status, JobStatus::Complete);
        assert_eq!(s.samples, o.epochs);
        assert_eq!(
            s.samples[0].live_bytes,
            Some(530_859_008),
            "CUDA live bytes at the epoch's end"
        );
        for want in [
            "130 steps",
            "batch 128",
            "on cuda:0",
            "63.1 ms per step",
            "device peak",
        ] {
            assert!(s.message.contains(want), "{want:?} in {}", s.message);
        }
        assert_eq!(
            s.verdict.as_ref().map(|v| v.kind),
            Some(EpochVerdictKind::TooShort)
        );
        assert!(s.chart_svg.starts_with("<svg"), "{}", s.message);
        assert!(s.profile.is_none(), "no window was asked for");
        // The same run had it synced each step, its workers weighed and a window profiled:
        // the panel says so.
        let mut seen = o.observed.clone().expect("observed");
        seen.syncs_per_step = Some(1);
        seen.sync_share = Some(0.11);
        seen.sync_site = Some("train.py:41 .item()".into());
        seen.profile = Some(headroom_model::observed::ProfileWindow {
            iterations: 20,
            asked: 20,
            warmup: 10,
            window_s: 1.5,
            device: "cuda".into(),
            ops: vec![headroom_model::observed::ProfiledOp {
                name: "aten::convolution".into(),
                calls: 1060,
                self_cpu_us: 30_000.0,
                cpu_us: 30_000.0,
                self_device_us: 900_000.0,
                device_us: 900_000.0,
                on_device: false,
            }],
            ..Default::default()
        });
        let with = WatchOutcome {
            observed: Some(seen),
            worker_bytes: Some(300 << 20),
            ..o.clone()
        };
        let s = wrapped_snapshot(&with, &EpochThresholds::default());
        assert!(
            s.message.contains(
                "1 host sync(s) per iteration, 11 % of the step (first: train.py:41 .item())"
            ),
            "{}",
            s.message
        );
        let workers = o
            .observed
            .as_ref()
            .and_then(|ob| ob.loader.as_ref())
            .map_or(0, |l| l.num_workers);
        assert!(workers > 0);
        assert!(
            s.message.contains(&format!(
                "each of {workers} DataLoader workers holds about 300 MiB"
            )),
            "{}",
            s.message
        );
        let p = s.profile.expect("the window");
        assert_eq!(p.of, "of the device time");
        assert_eq!(p.top[0].name, "aten::convolution");
        assert!(p
            .headline
            .starts_with("20 iterations profiled after 10 on cuda"));
        let failed = WatchOutcome {
            exit_code: Some(1),
            ..o
        };
        assert_eq!(
            wrapped_snapshot(&failed, &EpochThresholds::default()).status,
            JobStatus::Failed
        );
    }

    #[test]
    fn the_crossing_message_cites_both_figures() {
        let (title, body) = watch_crossed("python train.py", 0.314, 0.26);
        assert!(title.contains("leak suspected"));
        assert!(body.starts_with("python train.py grew +31 %"), "{body}");
        assert!(body.contains("26 % leak threshold"), "{body}");
    }

    fn verdict_of(s: &MemorySnapshot) -> EpochVerdict {
        headroom_model::epochs::judge(&s.samples, &EpochThresholds::default())
    }

    #[test]
    fn a_numerics_check_is_its_verdict_and_the_tensors_past_the_tolerance_first() {
        use headroom_model::numerics::{Compared, NumericsReport};
        let c = |name: &str, rel: f64| Compared {
            name: name.into(),
            abs: rel * 3.0,
            rel,
        };
        let r = NumericsReport {
            device: "mps".into(),
            dtype: "f32".into(),
            reference: "cpu f32".into(),
            mode: "eval (dropout off)".into(),
            tolerance: 1e-3,
            layers: (0..12)
                .map(|i| {
                    c(
                        &format!("layer{i}"),
                        if i == 7 { 0.04 } else { 1e-6 * f64::from(i) },
                    )
                })
                .collect(),
            output: Some(c("output", 0.05)),
            grads: vec![c("layer7.weight", 0.2)],
            seconds: 0.4,
            tf32: Vec::new(),
            fallback_ops: vec!["aten::_linalg_solve_ex.result".into()],
            error: None,
        };
        let v = NumericsView::of(&r);
        assert!(!v.within);
        assert!(v.verdict.contains("layer `layer7`"), "{}", v.verdict);
        // The operators that fell back are said with it: their errors are the CPU's.
        assert!(
            v.verdict
                .ends_with("1 operator fell back to the CPU by then (aten::_linalg_solve_ex.result): it was computed there"),
            "{}",
            v.verdict
        );
        assert_eq!(v.rows.len(), 8);
        let over: Vec<&str> = v
            .rows
            .iter()
            .filter(|r| r.over)
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(
            over,
            ["layer7", "output", "layer7.weight"],
            "past it, in call order"
        );
        assert_eq!(
            (v.rows[0].rel.as_str(), v.rows[0].what.as_str()),
            ("0.0400", "layer")
        );
        assert_eq!(v.rows[3].rel, "1.1e-5", "then the largest error below it");
        let clean = NumericsReport {
            layers: vec![c("a", 0.0), c("b", 2e-7)],
            output: Some(c("output", 1e-7)),
            grads: Vec::new(),
            ..r
        };
        let v = NumericsView::of(&clean);
        assert!(
            v.within && v.verdict.contains("within 1.0e-3 everywhere"),
            "{}",
            v.verdict
        );
        assert_eq!(v.rows[0].name, "b");
    }

    #[test]
    fn the_chart_follows_the_samples_and_the_watch_readings() {
        let mut s = MemorySnapshot {
            kind: RunKind::Epochs,
            ..MemorySnapshot::default()
        };
        for e in 1..=4u32 {
            s.samples.push(EpochSample {
                epoch: e,
                live_bytes: None,
                cache_bytes: None,
                footprint_bytes: Some(u64::from(400 + 64 * e) << 20),
                seconds: 0.1,
                samples_per_s: Some(1000.0),
                cache_before_bytes: None,
            });
        }
        redraw(&mut s, &EpochThresholds::default());
        assert!(s.chart_svg.contains("footprint") && s.chart_svg.contains("leak threshold"));
        assert!(
            !s.chart_svg.contains("live tensors"),
            "no live series on the CPU"
        );
        assert_eq!(
            verdict_of(&s).kind,
            headroom_model::epochs::EpochVerdictKind::LeakSuspected
        );
        let mut w = MemorySnapshot {
            kind: RunKind::Watch,
            ..MemorySnapshot::default()
        };
        w.readings.push(MemoryReading {
            t: 0.0,
            process_bytes: 100 << 20,
            tree_bytes: 100 << 20,
            tree_pss_bytes: None,
            processes: 1,
            children_bytes: None,
            process_peak_bytes: None,
        });
        redraw(&mut w, &EpochThresholds::default());
        assert!(w.chart_svg.contains("seconds") && w.chart_svg.contains("process tree"));
    }
}
