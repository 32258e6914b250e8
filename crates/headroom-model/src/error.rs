//! The one code a UI branches on, and the one error of the pure crate: [`Invalid`] input.

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

/// A value that could not be understood: what was wrong and what to give instead. The one error
/// of this crate's parsers and checks; the crates above carry it as their own "invalid input".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    /// The code a UI branches on.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InvalidInput
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
}
