//! Every path Headroom writes under. `HEADROOM_HOME`, when set, holds all of Headroom's data and
//! configuration instead of the platform folders (tests set it so nothing touches the real ones).

use std::path::PathBuf;

use crate::CoreError;

/// The environment variable that overrides where Headroom keeps its files.
pub const HOME_ENV: &str = "HEADROOM_HOME";

/// Headroom's data folder: `$HEADROOM_HOME`, else the platform data folder plus `Headroom`
/// (macOS `~/Library/Application Support/Headroom`, Linux `~/.local/share/headroom`).
pub fn data_dir() -> Result<PathBuf, CoreError> {
    if let Some(home) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let base = dirs::data_dir().ok_or_else(|| {
        CoreError::InvalidInput(format!(
            "no data folder is known for this user; set {HOME_ENV} to a folder Headroom may use"
        ))
    })?;
    Ok(base.join(if cfg!(target_os = "macos") {
        "Headroom"
    } else {
        "headroom"
    }))
}

/// The ledger database file.
pub fn ledger_path() -> Result<PathBuf, CoreError> {
    Ok(data_dir()?.join("ledger.sqlite3"))
}

/// Creates `dir` (and parents) with a clear error.
pub fn ensure_dir(dir: &std::path::Path) -> Result<(), CoreError> {
    std::fs::create_dir_all(dir).map_err(|source| CoreError::Io {
        what: "cannot create folder",
        path: dir.display().to_string(),
        source,
    })
}
