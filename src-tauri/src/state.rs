//! What the app holds between commands: the last readiness report and the running sweep, whose
//! handle cancels the sweep when dropped (replaced, or the app quits).

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use headroom_core::jobs::sweep::{CancelToken, JobError};
use headroom_core::jobs::JobStatus;
use headroom_model::protocol::{Point, SweepSummary};
use headroom_probe::readiness::Report;
use serde::{Deserialize, Serialize};

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

/// The app's state.
#[derive(Debug, Default)]
pub struct AppState {
    pub report: Mutex<Option<Report>>,
    pub sweep: Mutex<Option<RunningSweep>>,
    pub memory: Mutex<Option<crate::memory::RunningMemory>>,
    /// The latest decision table, from the background loop.
    pub overview: Mutex<Option<Arc<crate::overview::OverviewSnapshot>>>,
    /// The open VNC tunnel.
    pub vnc: Mutex<crate::remote::VncState>,
    /// The project picked at the top of the popover: the Overview is judged from its runs.
    pub project: Mutex<Option<String>>,
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it (the data is plain).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Relays a stop to a command Headroom runs: once `stopped()` says so, SIGTERM goes into the
/// interrupt flag the command's watch polls (which forwards it to the command's group); the
/// relay ends with the job (`running()` false).
pub fn relay_stop(
    stopped: impl Fn() -> bool + Send + 'static,
    running: impl Fn() -> bool + Send + 'static,
    flag: Arc<std::sync::atomic::AtomicI32>,
) {
    std::thread::spawn(move || loop {
        if stopped() {
            flag.store(libc::SIGTERM, std::sync::atomic::Ordering::SeqCst);
            return;
        }
        if !running() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    });
}
