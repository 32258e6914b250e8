//! A sweep shown live in the menu bar: the snapshot it streams (a built-in workload's or the
//! user's script's), the order that starts one ([`SweepOrder`], from the Sweep panel's form or
//! "Sweep my training"), and the slot that runs it on its own thread ([`SweepSlot`]). Free of
//! Tauri, so the tray process runs the sweeps of a popover that is closed (its process then
//! ends: a closed Headroom is the tray alone, sweep or not), and the app alone runs its own.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use headroom_model::budget::BudgetSpec;
use headroom_model::protocol::{progress_line, Point, SweepRequest, SweepSummary};
use headroom_model::requests::{SweepInput, WorkloadInput};
use headroom_report::plot::{sweep_svg, ChartSpec};
use serde::{Deserialize, Serialize};

use crate::error::{CoreError, ErrorCode};
use crate::jobs::sweep::{CancelToken, JobError, SweepOutcome, Update};
use crate::jobs::JobStatus;

/// Chart size in the popover (CSS pixels).
pub const CHART: (u32, u32) = (360, 420);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a sweep stands, as the Sweep panel and the tray show it. Sent whole on every change,
/// so a popover opened mid-run draws everything from one message.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepSnapshot {
    pub running: bool,
    pub run_id: Option<i64>,
    pub workload: String,
    pub device: String,
    /// The remote host profile the worker runs on; this machine when absent.
    pub host: Option<String>,
    pub device_name: Option<String>,
    pub budget_bytes: Option<u64>,
    /// What the worker is doing now, in words.
    pub message: String,
    pub points: Vec<Point>,
    pub summary: Option<SweepSummary>,
    /// `running`, then how the run ended (`error` when it could not start).
    pub status: JobStatus,
    pub error: Option<JobError>,
    /// The throughput and memory chart (SVG), redrawn at every point.
    pub chart_svg: String,
    /// The accelerator against the CPU at the recommended batch ("Compare with the CPU").
    pub comparison: Option<headroom_model::summary::Comparison>,
    /// What makes the figures less sure: a point timed under load or still noisy at its cap.
    pub warnings: Vec<String>,
    /// [`Self::warnings`] in one line ([`headroom_model::summary::warnings_line`]), as they
    /// stand now (while the sweep runs too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub caution_line: Option<String>,
}

/// What the Sweep panel's form sends.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepForm {
    /// A built-in workload or the path of a TorchScript file.
    pub workload: String,
    /// One sample's shape without the batch (`3x224x224`), for a TorchScript file.
    pub input_shape: Option<String>,
    pub device: String,
    /// Typed as the enum for the UI; checked by the core's one parser (the same message as the
    /// CLI's for a value the UI could not have sent).
    #[cfg_attr(feature = "ts", ts(as = "headroom_model::protocol::Dtype"))]
    pub dtype: String,
    /// A size (`12GiB`), a share (`80%`), or `default`.
    pub budget: String,
    pub max_batch: Option<u32>,
    #[cfg_attr(feature = "ts", ts(as = "headroom_model::protocol::Mode"))]
    pub mode: String,
    /// A remote host profile to run the worker on (over ssh); this machine when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub host: Option<String>,
    /// Every doubling, each point run (no memory prediction, no ×4 strides, no jump to the
    /// predicted limit): slower, for comparing with an older sweep or a model whose memory does
    /// not grow in a line (`sweep --no-predict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub every_doubling: Option<bool>,
}

/// Checks the form and turns it into the worker's request: the core's sweep input, the one
/// check `headroom sweep` uses too.
pub fn request(form: &SweepForm) -> Result<SweepRequest, CoreError> {
    let input = SweepInput {
        what: WorkloadInput {
            workload: form.workload.clone(),
            input_shape: form.input_shape.clone(),
            device: form.device.clone(),
            dtype: form.dtype.clone(),
        },
        budget: form.budget.clone(),
        mode: form.mode.clone(),
        max_batch: form.max_batch,
        predict: !form.every_doubling.unwrap_or(false),
        ..SweepInput::default()
    };
    Ok(input.request()?)
}

/// What starts a sweep: the Sweep panel's form, or "Sweep my training" on a project (with
/// `devices`, "Compare with the CPU": `cpu,mps`, or empty for this machine's CPU and
/// accelerator). It crosses from the popover's process to the tray's as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SweepOrder {
    Form {
        form: SweepForm,
    },
    Project {
        name: String,
        devices: Option<String>,
    },
}

/// How a sweep's job ended: the sweep's outcome, and for a script swept over devices the device
/// it swept and the comparison with the CPU.
#[derive(Debug)]
pub struct Done {
    pub sweep: SweepOutcome,
    pub device: Option<String>,
    pub comparison: Option<headroom_model::summary::Comparison>,
}

impl From<SweepOutcome> for Done {
    fn from(sweep: SweepOutcome) -> Self {
        Self {
            sweep,
            device: None,
            comparison: None,
        }
    }
}

/// A sweep's work: runs it, each update handed to the callback.
pub type Job = Box<dyn FnOnce(&mut dyn FnMut(&Update)) -> Result<Done, CoreError> + Send + 'static>;

/// A checked order, ready to run: its first snapshot, its cancel, the flag a script's watch
/// polls (a cancel reaches the running start through it), and the work.
pub struct Prepared {
    pub first: SweepSnapshot,
    pub cancel: CancelToken,
    pub interrupt: Option<Arc<AtomicI32>>,
    pub job: Job,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("first", &self.first)
            .finish_non_exhaustive()
    }
}

fn refused(message: String) -> JobError {
    JobError {
        code: ErrorCode::BadRequest,
        message,
    }
}

/// Checks `order` (the form's values, the project and its command, the host) and makes the job
/// that runs it; a refusal says why with a code the UI branches on. Blocking: it reads the
/// projects, the hosts and the config.
pub fn prepare(order: &SweepOrder) -> Result<Prepared, JobError> {
    match order {
        SweepOrder::Form { form } => prepare_form(form).map_err(JobError::from),
        SweepOrder::Project { name, devices } => prepare_project(name, devices.as_deref()),
    }
}

fn prepare_form(form: &SweepForm) -> Result<Prepared, CoreError> {
    let req = request(form)?;
    let host = form.host.clone().filter(|h| !h.is_empty());
    let launcher = match host.as_deref() {
        Some(name) => {
            // Under the edit lock: ssh must know the name before it is used.
            let (profile, _) = crate::remote::Hosts::edit(&crate::remote::ssh_dir()?, |hosts| {
                Ok(hosts.get(name)?.clone())
            })?;
            crate::jobs::sweep::Launcher::Remote {
                profile,
                timeout: Duration::from_secs(15),
            }
        }
        None => crate::jobs::sweep::Launcher::Local(crate::jobs::worker_binary()?),
    };
    let first = SweepSnapshot {
        running: true,
        workload: req.workload.clone(),
        device: req.device.clone(),
        host,
        message: "starting the worker".into(),
        status: JobStatus::Running,
        ..SweepSnapshot::default()
    };
    let cancel = CancelToken::new("cancelled from the app");
    let token = cancel.clone();
    Ok(Prepared {
        first,
        cancel,
        interrupt: None,
        job: Box::new(move |on| {
            let ledger = crate::jobs::open_ledger_for_job()?;
            Ok(crate::jobs::sweep::run_sweep_on(&launcher, &req, &ledger, &token, on)?.into())
        }),
    })
}

fn prepare_project(name: &str, devices: Option<&str>) -> Result<Prepared, JobError> {
    use crate::jobs::usersweep;
    let project = crate::project::get(name)
        .and_then(|p| crate::project::check_usable(&p).map(|()| p))
        .map_err(JobError::from)?;
    if !project.has("batch") {
        return Err(refused(format!(
            "project {name}'s command has no {{batch}}; add it where the batch size goes (e.g. --batch-size {{batch}}) to sweep it"
        )));
    }
    let devices = match devices.map(str::trim) {
        None => Vec::new(),
        Some("") => usersweep::default_devices().ok_or_else(|| {
            refused("this machine has no accelerator to compare the CPU with; give the pair to compare, e.g. cpu@1,cpu@4".into())
        })?,
        Some(text) => usersweep::parse_devices(text).map_err(JobError::from)?,
    };
    if !devices.is_empty() && !project.has("device") {
        return Err(refused(format!(
            "project {name}'s command has no {{device}}; add it where the device goes (e.g. --device {{device}}) to compare devices"
        )));
    }
    let thresholds = headroom_store::config::load()
        .map_err(JobError::from)?
        .epochs;
    let interrupt = Arc::new(AtomicI32::new(0));
    let mut watch =
        crate::jobs::watch::WatchOptions::for_pid(Duration::from_millis(250), thresholds);
    watch.instrument = true;
    watch.stdout_to_stderr = true;
    watch.interrupt = Arc::clone(&interrupt);
    watch.dir = Some(project.dir.clone());
    let spec = usersweep::ScriptSweep {
        // Swept alone, `{device}` is this machine's accelerator (the CPU where there is none).
        command: if devices.is_empty() && project.has("device") {
            crate::project::fill(&project.argv(), None, Some(&usersweep::default_device()))
        } else {
            project.argv()
        },
        project: Some(project.name.clone()),
        start: 16,
        max: 65536,
        budget: BudgetSpec::Default,
        devices,
        point_limit: Duration::from_secs(180),
        prestart: usersweep::Prestart::Auto,
        watch,
    };
    usersweep::check(&spec).map_err(JobError::from)?;
    let first = SweepSnapshot {
        running: true,
        workload: spec.command.join(" "),
        device: "script".into(),
        message: format!("starting {}", project.name),
        status: JobStatus::Running,
        ..SweepSnapshot::default()
    };
    Ok(Prepared {
        first,
        cancel: CancelToken::new("cancelled from the app"),
        // Cancel reaches the running start through the interrupt flag the watch polls.
        interrupt: Some(interrupt),
        job: Box::new(move |on| {
            let ledger = crate::jobs::open_ledger_for_job()?;
            let o = usersweep::run_script_sweep(&spec, &ledger, on)?;
            Ok(Done {
                sweep: o.sweep,
                device: o.device,
                comparison: o.comparison,
            })
        }),
    })
}

/// Sets `flag` to SIGTERM once `stopped` says so, checking every 100 ms while `running` holds:
/// how a cancel reaches a watched script (its watch polls the flag).
pub fn relay_stop(
    stopped: impl Fn() -> bool + Send + 'static,
    running: impl Fn() -> bool + Send + 'static,
    flag: Arc<AtomicI32>,
) {
    std::thread::spawn(move || loop {
        if stopped() {
            flag.store(libc::SIGTERM, Ordering::SeqCst);
            return;
        }
        if !running() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    });
}

/// What changed in a running sweep, as [`SweepSlot::launch`] reports it with the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Its message (a step, a warning): the panel redraws, the tray need not.
    Step,
    /// It started on its device, or a point came: the tray moves too.
    Moved,
    /// It ended (the snapshot is the last).
    Ended,
}

/// A sweep running on its own thread; dropping the handle cancels it.
#[derive(Debug)]
pub struct RunningSweep {
    cancel: CancelToken,
    snapshot: Arc<Mutex<SweepSnapshot>>,
    /// The thread running it (detached when the handle goes; the cancel ends it).
    thread: Option<JoinHandle<()>>,
}

impl RunningSweep {
    pub fn snapshot(&self) -> SweepSnapshot {
        lock(&self.snapshot).clone()
    }

    pub fn is_running(&self) -> bool {
        lock(&self.snapshot).running
    }
}

impl Drop for RunningSweep {
    fn drop(&mut self) {
        if self.is_running() {
            self.cancel.cancel();
        }
    }
}

/// The slot of the running (or last) sweep: one at a time.
#[derive(Debug, Default)]
pub struct SweepSlot(Mutex<Option<RunningSweep>>);

impl SweepSlot {
    /// Whether a sweep runs now.
    pub fn running(&self) -> bool {
        lock(&self.0).as_ref().is_some_and(RunningSweep::is_running)
    }

    /// The current (or last) sweep's snapshot.
    pub fn snapshot(&self) -> Option<SweepSnapshot> {
        lock(&self.0).as_ref().map(RunningSweep::snapshot)
    }

    /// Cancels the running sweep; false when none runs.
    pub fn cancel(&self) -> bool {
        let slot = lock(&self.0);
        match slot.as_ref().filter(|s| s.is_running()) {
            Some(s) => {
                s.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels the running sweep and waits up to `at_most` for its thread to end (its points
    /// kept, the run marked interrupted): a process that is quitting.
    pub fn cancel_and_wait(&self, at_most: Duration) {
        let thread = {
            let mut slot = lock(&self.0);
            match slot.as_mut().filter(|s| s.is_running()) {
                Some(s) => {
                    s.cancel.cancel();
                    s.thread.take()
                }
                None => None,
            }
        };
        if let Some(t) = thread {
            let until = std::time::Instant::now() + at_most;
            while !t.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Starts `prepared` on its own thread as the slot's sweep: every update goes into the
    /// snapshot and out through `on_change` with what changed (the caller keeps the last one
    /// for a later popover, [`crate::kept`]). Refused while another sweep runs; returns the
    /// first snapshot (already drawn).
    pub fn launch(
        &self,
        prepared: Prepared,
        on_change: impl Fn(&SweepSnapshot, Change) + Send + 'static,
    ) -> Result<SweepSnapshot, JobError> {
        let Prepared {
            mut first,
            cancel,
            interrupt,
            job,
        } = prepared;
        let mut held = lock(&self.0);
        if held.as_ref().is_some_and(RunningSweep::is_running) {
            return Err(JobError {
                code: ErrorCode::Busy,
                message: "a sweep is already running; cancel it or wait for it to finish".into(),
            });
        }
        redraw(&mut first);
        let snapshot = Arc::new(Mutex::new(first.clone()));
        if let Some(flag) = interrupt {
            let (token, snap) = (cancel.clone(), Arc::clone(&snapshot));
            relay_stop(
                move || token.is_cancelled(),
                move || lock(&snap).running,
                flag,
            );
        }
        let snap = Arc::clone(&snapshot);
        let thread = std::thread::spawn(move || {
            let outcome = job(&mut |u| {
                let copy = {
                    let mut s = lock(&snap);
                    apply(&mut s, u);
                    s.clone()
                };
                let change = if matches!(u, Update::Point { .. } | Update::Started { .. }) {
                    Change::Moved
                } else {
                    Change::Step
                };
                on_change(&copy, change);
            });
            let last = {
                let mut s = lock(&snap);
                let outcome = outcome.map(|d| {
                    if let Some(device) = d.device {
                        s.device_name = Some(device.clone());
                        s.device = device;
                    }
                    s.comparison = d.comparison;
                    d.sweep
                });
                finish(&mut s, outcome)
            };
            on_change(&last, Change::Ended);
        });
        *held = Some(RunningSweep {
            cancel,
            snapshot,
            thread: Some(thread),
        });
        Ok(first)
    }
}

/// Draws the snapshot's chart again from its points.
pub fn redraw(s: &mut SweepSnapshot) {
    match sweep_svg(&ChartSpec {
        points: &s.points,
        summary: s.summary.as_ref(),
        budget_bytes: s.budget_bytes,
        width: CHART.0,
        height: CHART.1,
    }) {
        Ok(svg) => s.chart_svg = svg,
        Err(e) => s.message = e.to_string(),
    }
}

/// Closes a sweep's snapshot with how it ended (a built-in or a script sweep's outcome, or the
/// error that stopped it before a run was recorded), redrawn; returns the last snapshot to send.
pub fn finish(s: &mut SweepSnapshot, outcome: Result<SweepOutcome, CoreError>) -> SweepSnapshot {
    s.running = false;
    match outcome {
        Ok(o) => {
            s.status = o.status;
            s.summary.clone_from(&o.summary);
            s.points.clone_from(&o.points);
            s.error.clone_from(&o.error);
            for w in &o.warnings {
                if !s.warnings.contains(w) {
                    s.warnings.push(w.clone());
                }
            }
            s.message = match (&o.summary, &o.error) {
                (_, Some(e)) => e.message.clone(),
                (Some(sum), None) => sum.reason.clone(),
                (None, None) => format!("finished: {}", o.status),
            };
        }
        Err(e) => {
            s.status = JobStatus::Error;
            s.message = e.to_string();
            s.error = Some(JobError {
                code: e.code(),
                message: s.message.clone(),
            });
        }
    }
    redraw(s);
    s.caution_line = headroom_model::summary::warnings_line(&s.points, &s.warnings);
    s.clone()
}

/// Applies one update of the running sweep to its snapshot.
pub fn apply(s: &mut SweepSnapshot, u: &Update) {
    match u {
        Update::WorkerStarted { pid } => s.message = format!("worker started (pid {pid})"),
        Update::Started { run_id, hello } => {
            s.run_id = Some(*run_id);
            s.device.clone_from(&hello.device);
            s.device_name = Some(hello.device_name.clone());
            s.budget_bytes = Some(hello.budget_bytes);
            s.message = format!("run {run_id} on {}", hello.device_name);
            redraw(s);
        }
        Update::Progress {
            batch,
            phase,
            step,
            of,
        } => s.message = progress_line(*batch, *phase, *step, *of),
        Update::Point { point } => {
            headroom_model::protocol::upsert_point(&mut s.points, point.clone());
            redraw(s);
        }
        Update::Warning { message } => {
            s.message = format!("warning: {message}");
            if !s.warnings.contains(message) {
                s.warnings.push(message.clone());
            }
        }
    }
    s.caution_line = headroom_model::summary::warnings_line(&s.points, &s.warnings);
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use headroom_model::protocol::{Hello, Phase, PointStatus, PROTOCOL_VERSION};

    use super::*;
    use crate::jobs::sweep::Update;

    fn hello() -> Hello {
        serde_json::from_value(serde_json::json!({
            "protocol": PROTOCOL_VERSION, "headroom_version": "0.1.0", "libtorch": "2.11.0",
            "device": "cpu", "device_name": "AMD EPYC", "capacity_bytes": 25_000_000_000u64,
            "available_bytes": 20_000_000_000u64, "budget_bytes": 18_000_000_000u64, "threads": 2,
            "workload": "mlp", "input_shape": [784], "parameters": 1_863_690, "pid": 42
        }))
        .expect("a hello")
    }

    fn point(batch: u32, rate: f64) -> Point {
        let mut p = Point::failed(batch, PointStatus::Ok, "");
        p.samples_per_s = Some(rate);
        p.peak_bytes = Some(u64::from(batch) * (100 << 20));
        p
    }

    #[test]
    fn updates_fill_the_snapshot_and_redraw_the_chart() {
        let mut s = SweepSnapshot {
            running: true,
            ..SweepSnapshot::default()
        };
        apply(
            &mut s,
            &Update::Started {
                run_id: 9,
                hello: hello(),
            },
        );
        assert_eq!((s.run_id, s.budget_bytes), (Some(9), Some(18_000_000_000)));
        assert!(s.chart_svg.contains("waiting for the first point"));
        apply(
            &mut s,
            &Update::Progress {
                batch: 4,
                phase: Phase::Timed,
                step: 3,
                of: 10,
            },
        );
        assert_eq!(s.message, "batch 4: timed steps 3/10");
        apply(
            &mut s,
            &Update::Point {
                point: point(4, 1234.0),
            },
        );
        assert_eq!(s.points.len(), 1);
        assert!(!s.chart_svg.contains("waiting for the first point"));
        assert!(s.chart_svg.contains("samples/s"));
    }

    /// A job that starts, sends a point when told to, and ends when told to (or cancelled).
    fn held_job(go: mpsc::Receiver<()>, cancel: &CancelToken) -> Prepared {
        let token = cancel.clone();
        Prepared {
            first: SweepSnapshot {
                running: true,
                workload: "mlp".into(),
                status: JobStatus::Running,
                ..SweepSnapshot::default()
            },
            cancel: cancel.clone(),
            interrupt: None,
            job: Box::new(move |on| {
                on(&Update::Started {
                    run_id: 3,
                    hello: hello(),
                });
                let _ = go.recv();
                on(&Update::Point {
                    point: point(16, 900.0),
                });
                while go.recv_timeout(Duration::from_millis(20)).is_err() {
                    if token.is_cancelled() {
                        return Err(CoreError::Worker("cancelled from the app".into()));
                    }
                }
                Ok(SweepOutcome {
                    status: JobStatus::Complete,
                    run_id: Some(3),
                    ledger: String::new(),
                    hello: None,
                    points: vec![point(16, 900.0)],
                    summary: None,
                    warnings: Vec::new(),
                    error: None,
                    worker_exit: None,
                    stderr_tail: Vec::new(),
                }
                .into())
            }),
        }
    }

    #[test]
    fn a_slot_runs_one_sweep_at_a_time_reports_each_change_and_cancels() {
        let slot = SweepSlot::default();
        let (go, wait) = mpsc::channel();
        let cancel = CancelToken::new("cancelled from the app");
        let (tx, rx) = mpsc::channel();
        let first = slot
            .launch(held_job(wait, &cancel), move |s, c| {
                let _ = tx.send((s.clone(), c));
            })
            .expect("started");
        assert!(first.running && first.chart_svg.contains("<svg"), "drawn");
        let (s, c) = rx.recv_timeout(Duration::from_secs(5)).expect("started");
        assert_eq!((c, s.run_id), (Change::Moved, Some(3)));
        assert!(slot.running());
        // A second while the first runs: refused, busy.
        let (_go2, wait2) = mpsc::channel();
        let e = slot
            .launch(held_job(wait2, &CancelToken::new("x")), |_, _| {})
            .expect_err("busy");
        assert_eq!(e.code, ErrorCode::Busy);
        go.send(()).expect("point");
        let (s, c) = rx.recv_timeout(Duration::from_secs(5)).expect("a point");
        assert_eq!((c, s.points.len()), (Change::Moved, 1));
        // Cancelled: the job ends, the last snapshot says so and is not running.
        slot.cancel_and_wait(Duration::from_secs(5));
        let (s, c) = rx.recv_timeout(Duration::from_secs(5)).expect("the end");
        assert_eq!(c, Change::Ended);
        assert!(!s.running && s.status == JobStatus::Error, "{s:?}");
        assert!(!slot.running());
        assert!(!slot.cancel(), "nothing left to cancel");
        assert_eq!(slot.snapshot().map(|s| s.running), Some(false));
    }
}
