//! The one error the UI receives: a `code` to branch on and a `message` for people.

use headroom_core::CoreError;
use serde::Serialize;

/// An error crossing to the UI as `{code, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error, ts_rs::TS)]
#[error("{message}")]
pub struct AppError {
    /// `invalid_input`, `ledger`, `worker`, `busy`, `not_found`, `internal`.
    pub code: String,
    pub message: String,
}

impl AppError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl From<CoreError> for AppError {
    fn from(e: CoreError) -> Self {
        let code = match &e {
            CoreError::InvalidInput(_) => "invalid_input",
            CoreError::Ledger { .. } | CoreError::LedgerTooNew { .. } => "ledger",
            CoreError::NoSuchRun(_) => "not_found",
            CoreError::Worker(_) => "worker",
            _ => "internal",
        };
        Self::new(code, e.to_string())
    }
}

impl From<tauri::Error> for AppError {
    fn from(e: tauri::Error) -> Self {
        Self::new("internal", e.to_string())
    }
}
