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

/// One read-modify-write of Headroom's files at a time, across processes (the CLI, the app):
/// an advisory lock (`flock` through [`std::fs::File::lock`]) on `.headroom.lock` in the folder
/// of the file edited, held until the guard drops. Re-entrant within a thread (an edit that
/// spans two files takes it once for both), so a caller may hold it around a whole change.
#[must_use = "the lock is held while the guard lives"]
#[derive(Debug)]
pub struct EditLock {
    held: Option<(std::fs::File, PathBuf)>,
}

thread_local! {
    static HELD: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Takes the edit lock of the folder holding `file` (waiting for another process' edit).
pub fn lock_edits(file: &std::path::Path) -> Result<EditLock, CoreError> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let at = dir.join(".headroom.lock");
    if HELD.with(|h| h.borrow().contains(&at)) {
        return Ok(EditLock { held: None });
    }
    ensure_dir(dir)?;
    let io = |what, source| CoreError::Io {
        what,
        path: at.display().to_string(),
        source,
    };
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&at)
        .map_err(|e| io("cannot open the edit lock", e))?;
    f.lock().map_err(|e| io("cannot take the edit lock", e))?;
    HELD.with(|h| h.borrow_mut().push(at.clone()));
    Ok(EditLock {
        held: Some((f, at)),
    })
}

impl Drop for EditLock {
    fn drop(&mut self) {
        if let Some((f, at)) = self.held.take() {
            HELD.with(|h| h.borrow_mut().retain(|p| p != &at));
            let _ = f.unlock();
        }
    }
}
