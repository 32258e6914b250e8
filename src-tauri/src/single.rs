//! One instance per Headroom folder, the guard under the single-instance plugin (which hands a
//! second start over to the first where it can see it, see `desktop`): the app holds an exclusive lock on `app.lock` in Headroom's folder; a
//! second start finds it held and leaves. A folder where the lock cannot be made (read-only, a
//! full disk) does not keep the app from starting — its panels say what is wrong with the
//! folder —: the lock then lives in the temporary folder, named after Headroom's folder, so it
//! still allows one instance per folder.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The lock as the app keeps it (managed state) until the process ends.
#[derive(Debug)]
pub struct Held {
    pub _lock: InstanceLock,
}

/// The held lock; released when dropped (or the process ends).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Why the lock was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum LockError {
    /// Another instance holds it (the message names its pid when known).
    Held(String),
    /// The lock file cannot be made or opened there.
    Unusable(String),
}

/// Takes the lock in Headroom's folder (or, when that folder cannot hold it, in the temporary
/// folder), or says which process holds it.
pub fn acquire() -> Result<InstanceLock, String> {
    let dir = headroom_store::paths::data_dir().map_err(|e| e.to_string())?;
    match acquire_in(&dir) {
        Ok(lock) => Ok(lock),
        Err(LockError::Held(m)) => Err(m),
        Err(LockError::Unusable(why)) => {
            let fallback = fallback_dir(&dir);
            eprintln!(
                "headroom-app: {why}; holding the one-instance lock in {} instead",
                fallback.display()
            );
            acquire_in(&fallback).map_err(|e| match e {
                LockError::Held(m) | LockError::Unusable(m) => m,
            })
        }
    }
}

/// The temporary folder's lock place for Headroom's folder `dir`.
pub fn fallback_dir(dir: &Path) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    dir.hash(&mut h);
    std::env::temp_dir().join(format!("headroom-lock-{:016x}", h.finish()))
}

/// Takes the lock in `dir`.
pub fn acquire_in(dir: &Path) -> Result<InstanceLock, LockError> {
    headroom_store::paths::ensure_dir(dir).map_err(|e| LockError::Unusable(e.to_string()))?;
    let path = dir.join("app.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| LockError::Unusable(format!("cannot open {}: {e}", path.display())))?;
    // SAFETY: flock on a descriptor we own; non-blocking.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let holder = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(LockError::Held(format!(
            "Headroom is already running{}; use its tray icon",
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
    #[test]
    fn a_second_instance_is_refused_until_the_first_ends() {
        let dir = tempfile::tempdir().expect("dir");
        let first = super::acquire_in(dir.path()).expect("the first instance");
        let second = super::acquire_in(dir.path()).expect_err("a second instance");
        assert_eq!(
            second,
            super::LockError::Held(format!(
                "Headroom is already running (pid {}); use its tray icon",
                std::process::id()
            ))
        );
        drop(first);
        assert!(super::acquire_in(dir.path()).is_ok());
    }

    #[test]
    fn a_folder_that_cannot_hold_the_lock_is_unusable_not_held() {
        let dir = tempfile::tempdir().expect("dir");
        // A file where the folder should be: the lock cannot be made under it.
        let blocked = dir.path().join("not-a-folder");
        std::fs::write(&blocked, b"x").expect("file");
        let e = super::acquire_in(&blocked.join("home")).expect_err("no folder");
        assert!(matches!(e, super::LockError::Unusable(_)), "{e:?}");
        // Its fallback place is stable for one folder and differs between folders.
        assert_eq!(super::fallback_dir(&blocked), super::fallback_dir(&blocked));
        assert_ne!(
            super::fallback_dir(&blocked),
            super::fallback_dir(dir.path())
        );
        let a = super::acquire_in(&super::fallback_dir(&blocked)).expect("the fallback lock");
        assert!(matches!(
            super::acquire_in(&super::fallback_dir(&blocked)),
            Err(super::LockError::Held(_))
        ));
        drop(a);
    }
}
