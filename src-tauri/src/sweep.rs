//! The Sweep panel's state and how a sweep fills it: the snapshot a sweep streams (a built-in
//! workload's or the user's script's), the running sweep's handle in the panel's own slot
//! ([`SweepSlot`], managed by the app), the updates applied to the snapshot, and the thread that
//! runs a sweep, streams it and tells the tray.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use headroom_core::jobs::sweep::{CancelToken, JobError, SweepOutcome, Update};
use headroom_core::jobs::JobStatus;
use headroom_model::protocol::{progress_line, Point, SweepSummary};
use headroom_report::plot::{sweep_svg, ChartSpec};
use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use tauri::{AppHandle, Runtime};

use crate::error::{AppError, ErrorCode};
use crate::tray::{SweepLine, TrayPart};
use crate::util::lock;

/// Chart size in the popover (CSS pixels).
pub const CHART: (u32, u32) = (360, 420);

/// Where a sweep stands, as the Sweep panel and the tray show it. Sent whole on every change,
/// so a popover opened mid-run draws everything from one message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
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
    #[ts(optional)]
    pub caution_line: Option<String>,
}

/// A sweep running on its own thread; dropping the handle cancels it.
#[derive(Debug)]
pub struct RunningSweep {
    pub cancel: CancelToken,
    pub snapshot: Arc<Mutex<SweepSnapshot>>,
    /// The thread running it (detached when the handle goes; the cancel ends it).
    pub _thread: Option<JoinHandle<()>>,
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

/// The Sweep panel's slot: the running (or last) sweep.
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

/// The tray's line for a snapshot.
pub fn tray_line(s: &SweepSnapshot) -> SweepLine {
    SweepLine {
        running: s.running,
        workload: s.workload.clone(),
        device: s.device.clone(),
        message: s.message.clone(),
        points: s.points.len(),
    }
}

/// Starts `job` on its own thread as the slot's sweep, shown from `first`: every update goes
/// into the snapshot and out through `on_update`; the tray hears of the start, of each point
/// and of the end. A cancel also reaches `interrupt` (the flag a script's watch polls) while
/// the sweep runs. Refused while another sweep runs.
pub fn launch<R: Runtime>(
    app: &AppHandle<R>,
    slot: &SweepSlot,
    mut first: SweepSnapshot,
    cancel: CancelToken,
    interrupt: Option<Arc<std::sync::atomic::AtomicI32>>,
    on_update: Channel<SweepSnapshot>,
    job: impl FnOnce(&mut dyn FnMut(&Update)) -> Result<Done, headroom_store::CoreError>
        + Send
        + 'static,
) -> Result<SweepSnapshot, AppError> {
    let mut held = lock(&slot.0);
    if held.as_ref().is_some_and(RunningSweep::is_running) {
        return Err(AppError::new(
            ErrorCode::Busy,
            "a sweep is already running; cancel it or wait for it to finish",
        ));
    }
    redraw(&mut first);
    let snapshot = Arc::new(Mutex::new(first.clone()));
    if let Some(flag) = interrupt {
        let (token, snap) = (cancel.clone(), Arc::clone(&snapshot));
        crate::util::relay_stop(
            move || token.is_cancelled(),
            move || lock(&snap).running,
            flag,
        );
    }
    let (snap, handle) = (Arc::clone(&snapshot), app.clone());
    let thread = std::thread::spawn(move || {
        let send = |s: &SweepSnapshot| {
            let _ = on_update.send(s.clone());
        };
        let outcome = job(&mut |u| {
            let copy = {
                let mut s = lock(&snap);
                apply(&mut s, u);
                s.clone()
            };
            send(&copy);
            // The tray moves with points, not with every step.
            if matches!(u, Update::Point { .. } | Update::Started { .. }) {
                crate::tray::tell(&handle, TrayPart::Sweep(Some(tray_line(&copy))));
            }
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
        send(&last);
        // For a popover made in a new process (this one ends once closed and idle).
        crate::kept::keep("sweep", &last);
        crate::tray::tell(&handle, TrayPart::Sweep(Some(tray_line(&last))));
    });
    *held = Some(RunningSweep {
        cancel,
        snapshot,
        _thread: Some(thread),
    });
    drop(held);
    crate::tray::tell(app, TrayPart::Sweep(Some(tray_line(&first))));
    Ok(first)
}

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
pub fn finish(
    s: &mut SweepSnapshot,
    outcome: Result<SweepOutcome, headroom_store::CoreError>,
) -> SweepSnapshot {
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
                code: AppError::from(e).code,
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
    use headroom_model::protocol::{Hello, Phase, PointStatus, PROTOCOL_VERSION};

    use super::*;

    #[test]
    fn updates_fill_the_snapshot_and_redraw_the_chart() {
        let mut s = SweepSnapshot {
            running: true,
            ..SweepSnapshot::default()
        };
        let hello: Hello = serde_json::from_value(serde_json::json!({
            "protocol": PROTOCOL_VERSION, "headroom_version": "0.1.0", "libtorch": "2.11.0",
            "device": "cpu", "device_name": "AMD EPYC", "capacity_bytes": 25_000_000_000u64,
            "available_bytes": 20_000_000_000u64, "budget_bytes": 18_000_000_000u64, "threads": 2,
            "workload": "mlp", "input_shape": [784], "parameters": 1_863_690, "pid": 42
        }))
        .expect("a hello");
        apply(&mut s, &Update::Started { run_id: 9, hello });
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
        let mut p = Point::failed(4, PointStatus::Ok, "");
        p.samples_per_s = Some(1234.0);
        p.peak_bytes = Some(400 << 20);
        apply(&mut s, &Update::Point { point: p });
        assert_eq!(s.points.len(), 1);
        assert!(!s.chart_svg.contains("waiting for the first point"));
        assert!(s.chart_svg.contains("samples/s"));
    }
}
