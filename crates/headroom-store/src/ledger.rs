//! The ledger: every run and every point in one SQLite file (WAL), written as results arrive so a
//! worker that dies loses nothing it had finished. Schema migrations are embedded and versioned
//! with `PRAGMA user_version`; a database newer than this binary is refused with a clear error.

mod keep;
mod migrations;
mod read;
mod write;

pub use keep::{Settled, KEEP_BYTES};

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::CoreError;
use headroom_model::protocol::SweepSummary;

pub use migrations::SCHEMA_VERSION;

/// An open ledger.
#[derive(Debug)]
pub struct Ledger {
    conn: Connection,
    path: PathBuf,
    /// Samples every run begun through this handle records at its start (see [`Ledger::attach`]).
    attached: std::cell::RefCell<Vec<(u32, String, serde_json::Value)>>,
    /// What a handle that keeps going holds back (see [`Ledger::keep_going`]).
    keep: std::cell::RefCell<keep::Keep>,
    /// What every run begun through this handle records at its start (see [`Ledger::on_begin`]).
    start_samples: std::cell::Cell<Option<StartSamples>>,
}

/// The samples a run records at its start beyond its row — `(seq, kind, value)` for `run`, the
/// ledger being at the path given — as the opener of the ledger gathers them.
pub type StartSamples = fn(&NewRun, &Path) -> Vec<(u32, String, serde_json::Value)>;

/// How a run ended (or that it has not yet).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still running, or its parent died without closing it.
    Running,
    /// Finished and summarised.
    Complete,
    /// The worker died or was stopped before the end; the points it finished are kept.
    Interrupted,
    /// The run ended with an error.
    Failed,
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl RunStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Complete => "complete",
            Self::Interrupted => "interrupted",
            Self::Failed => "failed",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "complete" => Self::Complete,
            "interrupted" => Self::Interrupted,
            "failed" => Self::Failed,
            _ => Self::Running,
        }
    }
}

/// What recorded a run: the command (or the app's panel doing the same) that started it.
///
/// Stored and sent by its name ([`RunKind::as_str`]); a name this Headroom does not know reads
/// back as [`RunKind::Other`] (serde by hand: ts-rs cannot read `#[serde(other)]`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename_all = "kebab-case"))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RunKind {
    /// `headroom doctor`: a readiness report.
    Doctor,
    /// `headroom sweep` (and `remote sweep`, the app's Sweep panel).
    Sweep,
    /// `headroom epochs` (and the Memory panel's epochs).
    Epochs,
    /// `headroom profile`.
    Profile,
    /// `headroom run`: the user's own command, wrapped (and each combination of `run --sweep`).
    Run,
    /// `headroom watch`: a process watched from outside.
    Watch,
    /// `sweep --compare mlx`: the MLX side.
    MlxCompare,
    /// `headroom remote check`.
    RemoteCheck,
    /// `headroom numerics --workload`: a built-in model or a TorchScript file against a CPU copy.
    Numerics,
    /// A kind this Headroom does not know (a ledger written by a newer one).
    #[default]
    Other,
}

impl RunKind {
    /// Every kind this Headroom records.
    pub const ALL: [Self; 9] = [
        Self::Doctor,
        Self::Sweep,
        Self::Epochs,
        Self::Profile,
        Self::Run,
        Self::Watch,
        Self::MlxCompare,
        Self::RemoteCheck,
        Self::Numerics,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Doctor => "doctor",
            Self::Sweep => "sweep",
            Self::Epochs => "epochs",
            Self::Profile => "profile",
            Self::Run => "run",
            Self::Watch => "watch",
            Self::MlxCompare => "mlx-compare",
            Self::RemoteCheck => "remote-check",
            Self::Numerics => "numerics",
            Self::Other => "other",
        }
    }

    /// The kind stored as `text`; [`RunKind::Other`] for a name this Headroom does not know.
    pub fn parse(text: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == text)
            .unwrap_or(Self::Other)
    }
}

impl Serialize for RunKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RunKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Self::parse(&name))
    }
}

impl std::fmt::Display for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is known about a run when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRun {
    pub kind: RunKind,
    pub host: String,
    pub device: String,
    pub device_name: String,
    pub workload: String,
    /// The precision it ran in; none for runs that have none (doctor, a wrapped command).
    pub dtype: Option<headroom_model::protocol::Dtype>,
    /// Training or inference; none for runs that have none.
    pub mode: Option<headroom_model::protocol::Mode>,
    pub libtorch: String,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub budget_bytes: Option<u64>,
    /// `Some(false)` where no CPU fallback can happen (CPU, CUDA); `None` when unknown.
    pub fallback: Option<bool>,
    /// The request as sent to the worker, for reproduction.
    pub request_json: String,
    /// The process recording the run (on `host`), to tell later whether it is still alive.
    pub owner_pid: Option<u32>,
}

/// The sample seq of a run's conditions at its start (kind `conditions`), apart from the
/// readings and epochs that count up from 1.
pub const CONDITIONS_SEQ: u32 = 900_000_000;

/// The sample seq of the leak thresholds a memory run was judged with (kind `thresholds`).
pub const THRESHOLDS_SEQ: u32 = CONDITIONS_SEQ + 2;
/// The sample seq of the worker's `hello` (threads, memory it saw) (kind `hello`).
pub const HELLO_SEQ: u32 = CONDITIONS_SEQ + 3;
/// The sample seq of the dataset files' checksums (kind `data`).
pub const DATA_SEQ: u32 = CONDITIONS_SEQ + 4;
/// The sample seq of the round trip to the artifact store (kind `artifact_rtt`).
pub const ARTIFACT_RTT_SEQ: u32 = CONDITIONS_SEQ + 5;

/// The first sample seq of an `epochs` run's per-epoch conditions (kind `epoch_conditions`,
/// seq this plus the epoch): a run's samples share one sequence, whatever their kind.
pub const EPOCH_CONDITIONS_SEQ: u32 = 800_000_000;

/// The sample kind under which a script sweep keeps its comparison with the CPU baseline.
pub const COMPARISON_SAMPLE: &str = "comparison";

/// The memory a group of apps held when a run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppsHeld {
    /// `conferencing`, `IDEs`, `browsers`.
    pub group: String,
    pub bytes: u64,
    /// Its largest apps, at most three.
    pub apps: Vec<String>,
}

/// Where the ledger lives and the apps holding memory at a run's start (sample `context`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    /// The mount of Headroom's folder; `None` where it cannot be read.
    pub data_mount: Option<headroom_model::samples::MountFacts>,
    pub apps: Vec<AppsHeld>,
    /// The torch in the user's own Python (beside Headroom's libtorch); `None` when unknown:
    /// no Python found, or the run is on another host.
    #[serde(default)]
    pub python: Option<headroom_model::samples::PythonTorch>,
}

/// How a dtype or mode is stored: its name, `-` for none.
pub(crate) fn stored_name(name: Option<&'static str>) -> &'static str {
    name.unwrap_or("-")
}

/// One run as stored.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub kind: RunKind,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: RunStatus,
    pub host: String,
    pub device: String,
    pub device_name: String,
    pub workload: String,
    /// The precision it ran in; none for runs that have none (doctor, a wrapped command).
    pub dtype: Option<headroom_model::protocol::Dtype>,
    /// Training or inference; none for runs that have none.
    pub mode: Option<headroom_model::protocol::Mode>,
    pub libtorch: String,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub budget_bytes: Option<u64>,
    pub chosen_batch: Option<u32>,
    pub peak_bytes: Option<u64>,
    pub fallback: Option<bool>,
    pub points: u32,
    pub summary: Option<SweepSummary>,
    /// The whole report of a run that is not a sweep (a `doctor` run's facts and lights).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(type = "unknown", optional))]
    pub report: Option<serde_json::Value>,
    pub note: Option<String>,
}

impl RunRecord {
    /// Its dtype's name, `-` for none.
    pub fn dtype_name(&self) -> &'static str {
        stored_name(self.dtype.map(headroom_model::protocol::Dtype::as_str))
    }

    /// `f32 / train`, `- / -` for a run that has neither.
    pub fn dtype_mode(&self) -> String {
        format!(
            "{} / {}",
            self.dtype_name(),
            stored_name(self.mode.map(headroom_model::protocol::Mode::as_str))
        )
    }
}

/// Switches the ledger to write-ahead logging, so readers never block the sweep that writes.
/// SQLite does not call the busy handler while another connection holds the lock this switch
/// needs (two processes creating the ledger at once), so the switch is retried here for as long
/// as the busy timeout would have waited.
fn use_wal(conn: &Connection, busy: Duration) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + busy;
    loop {
        let mode =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0));
        match mode {
            Ok(_) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl Ledger {
    /// Opens (creating if needed) the ledger at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, CoreError> {
        Self::open_waiting(path, BUSY_TIMEOUT)
    }

    /// [`Ledger::open`], waiting at most `busy` for another process' lock.
    pub fn open_waiting(path: &Path, busy: Duration) -> Result<Self, CoreError> {
        if path.is_dir() {
            return Err(CoreError::InvalidInput(format!(
                "ledger {} is a folder, not a file: move it aside (or set HEADROOM_HOME to \
                 another folder) and Headroom starts a new ledger there",
                path.display()
            )));
        }
        if let Some(dir) = path.parent() {
            crate::paths::ensure_dir(dir)?;
        }
        let err = |source| CoreError::Ledger {
            path: path.display().to_string(),
            source,
        };
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(busy).map_err(err)?;
        use_wal(&conn, busy).map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(err)?;
        let ledger = Self::on(conn, path);
        migrations::migrate(&ledger.conn, path)?;
        ledger.replay_spills();
        let _ = ledger.conn.busy_timeout(BUSY_TIMEOUT);
        Ok(ledger)
    }

    /// A handle over `conn`, for the ledger at `path`: nothing kept, attached or sampled yet.
    fn on(conn: Connection, path: &Path) -> Self {
        Self {
            conn,
            path: path.to_path_buf(),
            attached: std::cell::RefCell::default(),
            keep: std::cell::RefCell::default(),
            start_samples: std::cell::Cell::new(None),
        }
    }

    /// Opens the ledger at its default place ([`crate::paths::ledger_path`]).
    pub fn open_default() -> Result<Self, CoreError> {
        Self::open(&crate::paths::ledger_path()?)
    }

    /// Makes every run begun from now on through this handle record what `samples` gathers at
    /// its start (the ledger itself gathers nothing: it is storage).
    pub fn on_begin(&self, samples: StartSamples) {
        self.start_samples.set(Some(samples));
    }

    /// Where this ledger lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, source: rusqlite::Error) -> CoreError {
        CoreError::Ledger {
            path: self.path.display().to_string(),
            source,
        }
    }
}
