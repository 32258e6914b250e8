//! The one error type of `headroom-core`, and the one code a UI branches on.

use serde::{Deserialize, Serialize};

/// What kind of failure an error is: what the app's UI receives beside the message (the CLI
/// prints the message alone), and what a job that failed reports (the worker's `error` event,
/// a sweep's or an epochs run's `error`). Every error the app returns and every job error
/// carries one of these: one set of codes everywhere.
///
/// Read leniently: a code this Headroom does not know (a newer worker on a remote host) reads
/// as [`ErrorCode::Internal`], so its message still arrives.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A value the user gave was refused; the message says which and what to give instead.
    InvalidInput,
    /// A run, host or process that is not there.
    NotFound,
    /// A job of the same kind is already running.
    Busy,
    /// The ledger could not be read or written.
    Ledger,
    /// A worker (or another child process) could not be started or spoken to.
    Worker,
    /// A file could not be read or written.
    Io,
    /// `ssh-keygen` failed.
    Keygen,
    /// OpenSSH's client is missing.
    NoSsh,
    /// The OS could not open a URL or a file.
    Opener,
    /// An SSH tunnel could not be opened.
    Tunnel,
    /// Anything else (a bug: the message says what).
    Internal,
    /// The worker refused its request (a value the parent should have checked, a protocol
    /// mismatch).
    BadRequest,
    /// The device asked for is not there (`mps` off a Mac, `cuda:3` on one GPU).
    BadDevice,
    /// No such built-in workload.
    BadWorkload,
    /// The input shape does not suit the workload.
    BadShape,
    /// A TorchScript file that is missing or cannot be loaded and trained.
    BadModel,
    /// The device's memory cannot be read, so no budget can be kept.
    NoMemoryInfo,
    /// The device's allocator failed (its statistics or `empty_cache`).
    Allocator,
    /// libtorch raised an error.
    Torch,
    /// `headroom-worker` is missing beside `headroom`.
    NoWorker,
    /// The worker died or was stopped before the end.
    Interrupted,
    /// The user cancelled the job.
    Cancelled,
    /// The worker passed its memory budget and was stopped.
    OverBudget,
}

impl ErrorCode {
    /// Every code, in the order the UI documents them.
    pub const ALL: [Self; 23] = [
        Self::InvalidInput,
        Self::NotFound,
        Self::Busy,
        Self::Ledger,
        Self::Worker,
        Self::Io,
        Self::Keygen,
        Self::NoSsh,
        Self::Opener,
        Self::Tunnel,
        Self::Internal,
        Self::BadRequest,
        Self::BadDevice,
        Self::BadWorkload,
        Self::BadShape,
        Self::BadModel,
        Self::NoMemoryInfo,
        Self::Allocator,
        Self::Torch,
        Self::NoWorker,
        Self::Interrupted,
        Self::Cancelled,
        Self::OverBudget,
    ];

    /// The wire name (`invalid_input`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::NotFound => "not_found",
            Self::Busy => "busy",
            Self::Ledger => "ledger",
            Self::Worker => "worker",
            Self::Io => "io",
            Self::Keygen => "keygen",
            Self::NoSsh => "no_ssh",
            Self::Opener => "opener",
            Self::Tunnel => "tunnel",
            Self::Internal => "internal",
            Self::BadRequest => "bad_request",
            Self::BadDevice => "bad_device",
            Self::BadWorkload => "bad_workload",
            Self::BadShape => "bad_shape",
            Self::BadModel => "bad_model",
            Self::NoMemoryInfo => "no_memory_info",
            Self::Allocator => "allocator",
            Self::Torch => "torch",
            Self::NoWorker => "no_worker",
            Self::Interrupted => "interrupted",
            Self::Cancelled => "cancelled",
            Self::OverBudget => "over_budget",
        }
    }

    /// The code named `text`; [`ErrorCode::Internal`] for a name this Headroom does not know.
    pub fn parse(text: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == text)
            .unwrap_or(Self::Internal)
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Self::parse(&name))
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What can go wrong inside the domain crate. Each message says what was wrong and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A user-supplied value could not be understood.
    #[error("{0}")]
    InvalidInput(String),
    /// The ledger database failed.
    #[error("ledger {path}: {source}{}", ledger_advice(source))]
    Ledger {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    /// The ledger was written by a newer Headroom.
    #[error(
        "ledger {path} has schema version {found}, but this headroom knows only up to {known}; \
         upgrade headroom, or point HEADROOM_HOME at another folder"
    )]
    LedgerTooNew {
        path: String,
        found: i64,
        known: i64,
    },
    /// The requested run does not exist.
    #[error("no run {0} in the ledger; `headroom ledger list` shows the runs there are")]
    NoSuchRun(i64),
    /// A filesystem operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A worker process could not be started, spoken to or waited for.
    #[error("{0}")]
    Worker(String),
    /// A stored JSON document could not be decoded.
    #[error("stored JSON is malformed: {0}")]
    Json(#[from] serde_json::Error),
}

impl CoreError {
    /// The code a UI branches on.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::InvalidInput(_) => ErrorCode::InvalidInput,
            Self::Ledger { .. } | Self::LedgerTooNew { .. } => ErrorCode::Ledger,
            Self::NoSuchRun(_) => ErrorCode::NotFound,
            Self::Worker(_) => ErrorCode::Worker,
            Self::Io { .. } => ErrorCode::Io,
            Self::Json(_) => ErrorCode::Internal,
        }
    }
}

/// What to do about a ledger failure, after its message.
pub fn ledger_advice(e: &rusqlite::Error) -> &'static str {
    use rusqlite::ErrorCode as C;
    let rusqlite::Error::SqliteFailure(f, _) = e else {
        return "";
    };
    match f.code {
        C::NotADatabase | C::DatabaseCorrupt => {
            "; the file is damaged or is not a Headroom ledger: move it aside (keep it for \
             recovery) and Headroom starts a new, empty ledger in its place"
        }
        C::ReadOnly | C::CannotOpen | C::PermissionDenied => {
            "; Headroom cannot write there: check the folder's permissions and free space, or \
             set HEADROOM_HOME to a writable folder"
        }
        C::DiskFull => {
            "; the disk is full: free some space and run again (what was recorded stays)"
        }
        // A full disk often surfaces as an I/O error instead (SQLite's shared-memory file cannot
        // grow: SQLITE_IOERR_SHMSIZE, seen on a full tmpfs).
        C::SystemIoFailure => {
            "; the ledger's files could not be read or written, most often because the disk is \
             full: free some space and run again (what was recorded stays), or set HEADROOM_HOME \
             to a folder on another disk"
        }
        C::DatabaseBusy | C::DatabaseLocked => {
            "; another Headroom process holds the ledger: try again in a moment"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_set_of_codes_reads_back() {
        for c in ErrorCode::ALL {
            let wire = serde_json::to_string(&c).unwrap();
            assert_eq!(wire, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&wire).unwrap(), c);
        }
    }

    fn failure(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn ledger_failures_say_what_to_do() {
        let e = |code| {
            CoreError::Ledger {
                path: "/h/ledger.sqlite3".into(),
                source: failure(code),
            }
            .to_string()
        };
        assert!(e(rusqlite::ffi::SQLITE_NOTADB).contains("move it aside"));
        assert!(e(rusqlite::ffi::SQLITE_CORRUPT).contains("move it aside"));
        assert!(e(rusqlite::ffi::SQLITE_READONLY).contains("HEADROOM_HOME"));
        assert!(e(rusqlite::ffi::SQLITE_CANTOPEN).contains("permissions"));
        assert!(e(rusqlite::ffi::SQLITE_FULL).contains("disk is full"));
        assert!(e(rusqlite::ffi::SQLITE_IOERR_SHMSIZE).contains("disk is full"));
        assert!(e(rusqlite::ffi::SQLITE_BUSY).contains("try again"));
        assert_eq!(
            ledger_advice(&failure(rusqlite::ffi::SQLITE_CONSTRAINT)),
            ""
        );
    }
}
