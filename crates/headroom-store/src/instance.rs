//! One process of a kind per Headroom folder: the app (`app.lock`) and the tray process
//! (`tray.lock`) each hold an exclusive lock on their file in Headroom's folder; a second start
//! finds it held and leaves, naming the first one's pid. A folder where the lock cannot be made
//! (read-only, a full disk) does not keep them from starting: the lock then lives in the
//! temporary folder, named after Headroom's folder ([`fallback_dir`]), still one per folder.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// The held lock; released when dropped (or the process ends).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Why the lock was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum LockError {
    /// Another process holds it (the message names its pid when known).
    Held(String),
    /// The lock file cannot be made or opened there.
    Unusable(String),
}

/// Takes `name` in Headroom's folder or, when that folder cannot hold it, in the temporary
/// folder; `what` names the process in the refusal ("Headroom", "Headroom's tray").
pub fn acquire(name: &str, what: &str) -> Result<InstanceLock, String> {
    let dir = crate::paths::data_dir().map_err(|e| e.to_string())?;
    match acquire_in(&dir, name, what) {
        Ok(lock) => Ok(lock),
        Err(LockError::Held(m)) => Err(m),
        Err(LockError::Unusable(why)) => {
            let fallback = fallback_dir(&dir);
            eprintln!(
                "headroom: {why}; holding the one-instance lock in {} instead",
                fallback.display()
            );
            acquire_in(&fallback, name, what).map_err(|e| match e {
                LockError::Held(m) | LockError::Unusable(m) => m,
            })
        }
    }
}

/// The pid written in `name`'s lock file (in Headroom's folder, else in its fallback place), if
/// one reads: who holds it when it is held.
pub fn holder(name: &str) -> Option<u32> {
    let dir = crate::paths::data_dir().ok()?;
    [fallback_dir(&dir), dir].iter().find_map(|d| {
        std::fs::read_to_string(d.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    })
}

/// The temporary folder's lock place for Headroom's folder `dir`.
pub fn fallback_dir(dir: &Path) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    dir.hash(&mut h);
    std::env::temp_dir().join(format!("headroom-lock-{:016x}", h.finish()))
}

/// Takes the lock file `name` in `dir` and writes this process's pid into it.
pub fn acquire_in(dir: &Path, name: &str, what: &str) -> Result<InstanceLock, LockError> {
    crate::paths::ensure_dir(dir).map_err(|e| LockError::Unusable(e.to_string()))?;
    let path = dir.join(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| LockError::Unusable(format!("cannot open {}: {e}", path.display())))?;
    if file.try_lock().is_err() {
        let holder = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(LockError::Held(format!(
            "{what} is already running{}; use its tray icon",
            holder
                .trim()
                .parse::<u32>()
                .map(|p| format!(" (pid {p})"))
                .unwrap_or_default()
        )));
    }
    let _ = file.set_len(0);
    let _ = std::io::Write::write_all(&mut &file, std::process::id().to_string().as_bytes());
    Ok(InstanceLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_instance_is_refused_until_the_first_ends_and_kinds_do_not_collide() {
        let dir = tempfile::tempdir().expect("dir");
        let first = acquire_in(dir.path(), "app.lock", "Headroom").expect("the first instance");
        let second = acquire_in(dir.path(), "app.lock", "Headroom").expect_err("a second one");
        assert_eq!(
            second,
            LockError::Held(format!(
                "Headroom is already running (pid {}); use its tray icon",
                std::process::id()
            ))
        );
        // The tray process's lock is its own: both run on one folder.
        let tray = acquire_in(dir.path(), "tray.lock", "Headroom's tray").expect("the tray");
        drop(first);
        assert!(acquire_in(dir.path(), "app.lock", "Headroom").is_ok());
        drop(tray);
    }

    #[test]
    fn a_folder_that_cannot_hold_the_lock_is_unusable_not_held() {
        let dir = tempfile::tempdir().expect("dir");
        // A file where the folder should be: the lock cannot be made under it.
        let blocked = dir.path().join("not-a-folder");
        std::fs::write(&blocked, b"x").expect("file");
        let e = acquire_in(&blocked.join("home"), "app.lock", "Headroom").expect_err("no folder");
        assert!(matches!(e, LockError::Unusable(_)), "{e:?}");
        // Its fallback place is stable for one folder and differs between folders.
        assert_eq!(fallback_dir(&blocked), fallback_dir(&blocked));
        assert_ne!(fallback_dir(&blocked), fallback_dir(dir.path()));
        let a = acquire_in(&fallback_dir(&blocked), "app.lock", "Headroom").expect("fallback");
        assert!(matches!(
            acquire_in(&fallback_dir(&blocked), "app.lock", "Headroom"),
            Err(LockError::Held(_))
        ));
        drop(a);
    }
}
