//! Small helpers every panel uses, depending on no panel: a lock that survives a poisoned
//! mutex, blocking work off the main thread, and the stop relay for a command Headroom runs.

use std::sync::{Mutex, MutexGuard};

use crate::error::{AppError, ErrorCode};

/// Locks a mutex, recovering the data if a panicking thread poisoned it (the data is plain).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `f` on the blocking pool, off the main thread.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    tauri::async_runtime::spawn_blocking(f).await.map_err(|e| {
        AppError::new(
            ErrorCode::Internal,
            format!("the background task failed: {e}"),
        )
    })?
}

/// A timer of the app in whole seconds from environment variable `var`, `default` where it is
/// unset or not a whole number (the benchmarks and the end-to-end tests shorten them).
pub fn seconds_env(var: &str, default: std::time::Duration) -> std::time::Duration {
    seconds_or(std::env::var(var).ok().as_deref(), default)
}

/// Whole seconds as written, `default` when `text` is not one.
pub fn seconds_or(text: Option<&str>, default: std::time::Duration) -> std::time::Duration {
    text.and_then(|t| t.trim().parse::<u64>().ok())
        .map_or(default, std::time::Duration::from_secs)
}
