//! The one error type of `headroom-core`.

/// What can go wrong inside the domain crate. Each message says what was wrong and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A user-supplied value could not be understood.
    #[error("{0}")]
    InvalidInput(String),
    /// The ledger database failed.
    #[error("ledger {path}: {source}")]
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
