//! Jobs that run in `headroom worker` child processes, shared by the CLI and the app: starting and
//! supervising a worker ([`supervisor`]), a whole sweep recorded point by point in the ledger with
//! restarts and cancellation ([`sweep`]), and a readiness check ([`doctor`]); and the decision
//! table now ([`decide_now`]). Nothing here links libtorch; the worker binary does.

pub mod decide_now;
pub mod detached;
pub mod doctor;
pub mod epoch_job;
pub mod live;
pub mod live_memory;
pub mod migrate;
pub mod numerics;
pub mod profile;
pub mod remote_runs;
pub mod screen;
pub mod supervisor;
pub mod sweep;
pub mod usersweep;
pub mod watch;

use std::path::{Path, PathBuf};

use crate::ledger::Ledger;
use crate::CoreError;

/// How a job stands or ended: a run's ledger status, or `error` when it failed before anything
/// was recorded (no run).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    #[default]
    Running,
    Complete,
    Interrupted,
    Failed,
    /// It failed before a run was recorded.
    Error,
}

impl JobStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Complete => "complete",
            Self::Interrupted => "interrupted",
            Self::Failed => "failed",
            Self::Error => "error",
        }
    }
}

impl From<crate::ledger::RunStatus> for JobStatus {
    fn from(s: crate::ledger::RunStatus) -> Self {
        use crate::ledger::RunStatus as R;
        match s {
            R::Running => Self::Running,
            R::Complete => Self::Complete,
            R::Interrupted => Self::Interrupted,
            R::Failed => Self::Failed,
        }
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for JobStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

pub use crate::child::process_alive;

pub use crate::machine::hostname;

/// What a run of this machine records at its start, the quiet facts that explain a figure weeks
/// later: power, battery, Low Power Mode, thermal state (unknown where the OS does not say), the
/// mount of the ledger at `ledger`, the apps holding memory, the user's Python and its torch.
/// Nothing for a run recorded here from another machine's output (a remote check, the
/// migration's run there): it did not meet them. (Given to [`Ledger::on_begin`].)
pub fn run_start_samples(
    run: &crate::ledger::NewRun,
    ledger: &Path,
) -> Vec<(u32, String, serde_json::Value)> {
    if run.host != hostname() {
        return Vec::new();
    }
    let cfg = crate::config::load()
        .map(|c| c.contention)
        .unwrap_or_default();
    let report = crate::contention::Sampler::new().sample(&cfg, &[], None);
    let apps = report
        .groups
        .iter()
        .filter(|g| {
            use crate::contention::Group;
            matches!(
                g.group,
                Group::Conferencing | Group::Ide | Group::Browser | Group::LocalLlm
            )
        })
        .map(|g| crate::ledger::AppsHeld {
            group: g.group.label().to_owned(),
            bytes: g.bytes,
            apps: g.apps.iter().take(3).map(|a| a.name.clone()).collect(),
        })
        .collect();
    let context = crate::ledger::RunContext {
        data_mount: crate::mounts::mount_of(ledger),
        apps,
        python: crate::readiness::python::users_torch(std::time::Duration::from_secs(10)),
    };
    let value = |v: serde_json::Result<serde_json::Value>| v.unwrap_or_default();
    vec![
        (
            crate::ledger::CONDITIONS_SEQ,
            "conditions".to_owned(),
            value(serde_json::to_value(crate::readiness::system::conditions())),
        ),
        (
            crate::ledger::CONDITIONS_SEQ + 1,
            "context".to_owned(),
            value(serde_json::to_value(context)),
        ),
    ]
}

/// Opens the default ledger and closes the runs of this host whose headroom process died mid-run.
pub fn open_ledger() -> Result<Ledger, CoreError> {
    let ledger = Ledger::open_default()?;
    ledger.on_begin(run_start_samples);
    ledger.close_orphans(&hostname(), process_alive)?;
    Ok(ledger)
}

/// Opens the ledger at `path` for a job that must not end because of it (see
/// [`Ledger::keep_going`]): closing the orphans is skipped while the ledger is busy, and a ledger
/// that cannot be opened gives a [detached](Ledger::detached) handle. `tell` prints on stderr
/// what happens to the records.
pub fn open_ledger_keeping(path: &std::path::Path, tell: bool) -> Result<Ledger, CoreError> {
    // The command waits for this open: a lock held elsewhere is waited for a moment only.
    match Ledger::open_waiting(path, std::time::Duration::from_secs(1)) {
        Ok(ledger) => {
            ledger.on_begin(run_start_samples);
            ledger.keep_going(tell);
            let _ = ledger.close_orphans(&hostname(), process_alive);
            Ok(ledger)
        }
        Err(e) => {
            let ledger = Ledger::detached(path, &e, tell)?;
            ledger.on_begin(run_start_samples);
            Ok(ledger)
        }
    }
}

/// [`open_ledger_keeping`] on the default ledger, saying nothing on stderr: for the app's jobs
/// (a sweep, epochs, a wrapped or watched training), which a locked ledger or a full disk must
/// not end; what the ledger refuses is written late or spilled when the handle drops.
pub fn open_ledger_for_job() -> Result<Ledger, CoreError> {
    open_ledger_keeping(&crate::paths::ledger_path()?, false)
}

/// The libtorch version in a `--version` line of `headroom` or `headroom-worker`
/// (`headroom 0.1.0 (commit 0123abcd4567, libtorch 2.11.0)`); `None` when the line has none or
/// says it is unknown.
pub fn libtorch_in_version(version_line: &str) -> Option<String> {
    let rest = &version_line[version_line.find("libtorch ")? + "libtorch ".len()..];
    let v: String = rest
        .chars()
        .take_while(|c| !matches!(c, ')' | ',') && !c.is_whitespace())
        .collect();
    (!v.is_empty() && !v.starts_with("unknown")).then_some(v)
}

/// The binary that links libtorch and runs jobs, installed beside `headroom` (which starts it for
/// `headroom worker`).
pub const TORCH_WORKER: &str = "headroom-worker";

/// `headroom-worker` beside the `headroom` binary at `headroom`, or what to do when it is missing.
pub fn torch_worker_beside(headroom: &Path) -> Result<PathBuf, CoreError> {
    let dir = headroom.parent().unwrap_or_else(|| Path::new("."));
    let p = dir.join(TORCH_WORKER);
    if p.is_file() {
        Ok(p)
    } else {
        Err(CoreError::Worker(format!(
            "{TORCH_WORKER} is missing from {} (it is the part of Headroom that carries libtorch and runs \
             every measurement, installed beside `headroom`): reinstall Headroom, or build both with \
             `cargo build --release -p headroom-cli` (scripts/bootstrap.sh does)",
            dir.display()
        )))
    }
}

/// The `headroom` binary that runs workers: `$HEADROOM_BIN` when set, else `headroom` next to
/// the running executable (the CLI itself, or the app installed beside it), else `headroom` on
/// PATH.
pub fn worker_binary() -> Result<PathBuf, CoreError> {
    if let Some(p) = std::env::var_os("HEADROOM_BIN").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()
        .map_err(|e| CoreError::Worker(format!("cannot find this program: {e}")))?;
    if exe.file_name().is_some_and(|n| n == "headroom") {
        return Ok(exe);
    }
    if let Some(sibling) = exe
        .parent()
        .map(|d| d.join("headroom"))
        .filter(|p| p.is_file())
    {
        return Ok(sibling);
    }
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("headroom"))
                .find(|p| p.is_file())
        })
        .ok_or_else(|| {
            CoreError::Worker(format!(
                "cannot find the `headroom` binary next to {} or on PATH; build it with scripts/bootstrap.sh or set HEADROOM_BIN",
                exe.display()
            ))
        })
}

/// Begins the ledger run of a worker job once its `hello` arrived: refuses a worker of another
/// protocol, then records the device and workload it reported, with this checkout's git state.
pub(crate) fn begin_worker_run(
    ledger: &Ledger,
    kind: crate::ledger::RunKind,
    h: &crate::protocol::Hello,
    dtype: crate::protocol::Dtype,
    shape: JobShape,
    request_json: String,
) -> Result<i64, CoreError> {
    if h.protocol != crate::protocol::PROTOCOL_VERSION {
        return Err(CoreError::Worker(format!(
            "the worker speaks protocol {}, this headroom {}; reinstall headroom",
            h.protocol,
            crate::protocol::PROTOCOL_VERSION
        )));
    }
    let git = crate::gitinfo::git_state(&std::env::current_dir().unwrap_or_default());
    let id = ledger.begin_run(&crate::ledger::NewRun {
        kind,
        host: hostname(),
        device: h.device.clone(),
        device_name: h.device_name.clone(),
        workload: h.workload.clone(),
        dtype: Some(dtype),
        mode: shape.mode,
        libtorch: h.libtorch.clone(),
        git_commit: git.commit,
        git_dirty: git.dirty,
        budget_bytes: None,
        fallback: (h.device != "mps").then_some(false),
        request_json,
        owner_pid: Some(std::process::id()),
    })?;
    ledger.add_sample(id, crate::ledger::HELLO_SEQ, "hello", h)?;
    if let Some(b) = shape.batch {
        ledger.set_batch(id, b)?;
    }
    Ok(id)
}

/// What a worker job's run is recorded as: training or inference (none for a numerics or
/// profile job, which is neither), and its batch where it runs at one given batch (a sweep's
/// is the one it chooses, written at its end).
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobShape {
    pub mode: Option<crate::protocol::Mode>,
    pub batch: Option<u32>,
}

impl JobShape {
    pub(crate) fn of(job: &crate::protocol::Job) -> Self {
        use crate::protocol::{Job, Mode};
        match job {
            Job::Sweep(r) => Self {
                mode: Some(r.mode),
                batch: None,
            },
            Job::Epochs(r) => Self {
                mode: Some(Mode::Train),
                batch: Some(r.batch),
            },
            Job::Numerics(r) => Self {
                mode: None,
                batch: Some(r.batch),
            },
            Job::Profile(r) => Self {
                mode: None,
                batch: Some(r.batch),
            },
        }
    }
}

/// `why` a worker job ended early, with the worker's last non-empty stderr line when it left one.
pub(crate) fn with_last_words(why: String, tail: &[String]) -> String {
    match tail.iter().rev().find(|l| !l.trim().is_empty()) {
        Some(l) => format!("{why}; its last words: {}", l.trim()),
        None => why,
    }
}

/// What a worker job that answers with one report left: its ledger run (begun at `hello`),
/// the report, its error and warnings, and how the worker ended.
pub(crate) struct OneReport<R> {
    pub run_id: Option<i64>,
    pub hello: Option<crate::protocol::Hello>,
    pub report: Option<R>,
    pub error: Option<sweep::JobError>,
    pub warnings: Vec<String>,
    pub exit: std::process::ExitStatus,
    pub tail: Vec<String>,
}

impl<R: serde::Serialize> OneReport<R> {
    /// Runs `job` (a profile or a numerics comparison) with a worker from `exe` to its end,
    /// beginning a `kind` run in `ledger` at its `hello`; `take` picks the report out of the
    /// events.
    pub(crate) fn collect(
        exe: &std::path::Path,
        job: &crate::protocol::Job,
        kind: crate::ledger::RunKind,
        ledger: &Ledger,
        cancel: &sweep::CancelToken,
        take: impl Fn(crate::protocol::Event) -> Option<R>,
    ) -> Result<Self, CoreError> {
        use crate::protocol::{Event, Job};
        let (dtype, request_json) = match job {
            Job::Profile(r) => (r.dtype, serde_json::to_string(r)?),
            Job::Numerics(r) => (r.dtype, serde_json::to_string(r)?),
            Job::Sweep(r) => (r.dtype, serde_json::to_string(r)?),
            Job::Epochs(r) => (r.dtype, serde_json::to_string(r)?),
        };
        let mut worker = supervisor::Worker::start(exe, job)?;
        cancel.set_pid(Some(worker.pid()));
        let (mut run_id, mut hello, mut report, mut error, mut warnings) =
            (None, None, None, None, Vec::new());
        while let Some(o) = worker.next_output() {
            let supervisor::Output::Event(e) = o else {
                continue;
            };
            match *e {
                Event::Hello(h) => {
                    run_id = Some(begin_worker_run(
                        ledger,
                        kind,
                        &h,
                        dtype,
                        JobShape::of(job),
                        request_json.clone(),
                    )?);
                    hello = Some(h);
                }
                Event::Error { code, message } => error = Some(sweep::JobError { code, message }),
                Event::Warning { message } => warnings.push(message),
                e => {
                    if let Some(r) = take(e) {
                        report = Some(r);
                    }
                }
            }
        }
        cancel.set_pid(None);
        let (exit, tail) = worker.wait()?;
        Ok(Self {
            run_id,
            hello,
            report,
            error,
            warnings,
            exit,
            tail,
        })
    }

    /// Closes the run: complete with the report and `note`, failed with the worker's error, or
    /// interrupted (and that said as the error) when the worker ended with neither.
    pub(crate) fn close(
        &mut self,
        ledger: &Ledger,
        note: Option<String>,
    ) -> Result<JobStatus, CoreError> {
        use crate::ledger::RunStatus;
        let (status, note) = match (&self.report, &self.error) {
            (Some(_), _) => (RunStatus::Complete, note),
            (None, Some(e)) => (RunStatus::Failed, Some(e.message.clone())),
            (None, None) => {
                let note = with_last_words(
                    format!("the worker {}", supervisor::describe_exit(&self.exit)),
                    &self.tail,
                );
                self.error = Some(sweep::JobError {
                    code: crate::error::ErrorCode::Interrupted,
                    message: note.clone(),
                });
                (RunStatus::Interrupted, Some(note))
            }
        };
        close_worker_run(
            ledger,
            self.run_id,
            status,
            &serde_json::to_value(&self.report)?,
            note.as_deref(),
        )
    }
}

/// Closes a worker job's ledger run (when one was begun) with its status, report and note;
/// returns the job's status word: the run's, or `error` when nothing was recorded.
pub(crate) fn close_worker_run(
    ledger: &Ledger,
    run_id: Option<i64>,
    status: crate::ledger::RunStatus,
    report: &serde_json::Value,
    note: Option<&str>,
) -> Result<JobStatus, CoreError> {
    match run_id {
        Some(id) => {
            ledger.finish_report(id, status, report, note)?;
            Ok(status.into())
        }
        None => Ok(JobStatus::Error),
    }
}
