//! The one error type of `headroom-core`; its code is the model's one [`ErrorCode`].

pub use headroom_model::error::{ErrorCode, Invalid};

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

impl From<Invalid> for CoreError {
    fn from(e: Invalid) -> Self {
        Self::InvalidInput(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
