//! Every path Headroom writes under. `HEADROOM_HOME`, when set, holds all of Headroom's data and
//! configuration instead of the platform folders (tests set it so nothing touches the real ones).

use std::io::Write;
use std::path::{Path, PathBuf};

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

/// An I/O error as a [`CoreError::Io`] that names what was done and to which path.
pub fn io_err<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> CoreError + 'a {
    move |source| CoreError::Io {
        what,
        path: path.display().to_string(),
        source,
    }
}

/// Replaces `path` with `bytes` atomically: a temp file in the same folder, synced, renamed
/// over it. Does nothing when the file already holds exactly these bytes. New files (and their
/// folder) are private to the user.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CoreError> {
    // A dotfile manager's symlink stays a link: its target is what changes.
    let target = through_links(path);
    let path = target.as_path();
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(io_err("cannot create folder", dir))?;
        set_mode(dir, 0o700)?;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    // One name per write, so two writes from one process (the app's threads) never share it.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.headroom-{}-{n}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(io_err("cannot write", &tmp))?;
        f.write_all(bytes).map_err(io_err("cannot write", &tmp))?;
        f.sync_all().map_err(io_err("cannot sync", &tmp))?;
        // Keep an existing file's permissions; new ones get `mode`.
        let keep = std::fs::metadata(path).ok().map(|m| m.permissions());
        match keep {
            Some(p) => {
                std::fs::set_permissions(&tmp, p).map_err(io_err("cannot set permissions", &tmp))?
            }
            None => set_mode(&tmp, mode)?,
        }
        std::fs::rename(&tmp, path).map_err(io_err("cannot replace", path))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The file `path` names after following its symlinks (a dangling one's target included);
/// `path` itself when it is no link.
pub fn through_links(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    // As the kernel does, give up on a loop after 40 links.
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(target) if target.is_absolute() => p = target,
            Ok(target) => p = p.parent().unwrap_or(Path::new(".")).join(target),
            Err(_) => break,
        }
    }
    p
}

/// Sets a file's Unix permission bits (`0o600` for keys and the managed ssh config).
pub fn set_mode(path: &Path, mode: u32) -> Result<(), CoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(io_err("cannot set permissions", path))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}
