//! The one error the UI receives: a `code` to branch on and a `message` for people.

pub use headroom_store::error::ErrorCode;
use headroom_store::CoreError;
use serde::Serialize;

/// An error crossing to the UI as `{code, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error, ts_rs::TS)]
#[error("{message}")]
pub struct AppError {
    pub code: ErrorCode,
    pub message: String,
}

impl AppError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<CoreError> for AppError {
    fn from(e: CoreError) -> Self {
        Self::new(e.code(), e.to_string())
    }
}

impl From<headroom_store::error::Invalid> for AppError {
    fn from(e: headroom_store::error::Invalid) -> Self {
        Self::new(e.code(), e.0)
    }
}

impl From<tauri::Error> for AppError {
    fn from(e: tauri::Error) -> Self {
        Self::new(ErrorCode::Internal, e.to_string())
    }
}
