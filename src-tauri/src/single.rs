//! One instance only: the app holds an exclusive lock on `app.lock` in Headroom's folder; a
//! second start finds it held and leaves.

use std::fs::File;
use std::os::unix::io::AsRawFd;

/// The held lock; released when dropped (or the process ends).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Takes the lock in Headroom's folder, or says which process holds it.
pub fn acquire() -> Result<InstanceLock, String> {
    let dir = headroom_core::paths::data_dir().map_err(|e| e.to_string())?;
    acquire_in(&dir)
}

/// Takes the lock in `dir`.
pub fn acquire_in(dir: &std::path::Path) -> Result<InstanceLock, String> {
    headroom_core::paths::ensure_dir(dir).map_err(|e| e.to_string())?;
    let path = dir.join("app.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor we own; non-blocking.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let holder = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(format!(
            "Headroom is already running{}; use its tray icon",
            holder
                .trim()
                .parse::<u32>()
                .map(|p| format!(" (pid {p})"))
                .unwrap_or_default()
        ));
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
            format!(
                "Headroom is already running (pid {}); use its tray icon",
                std::process::id()
            )
        );
        drop(first);
        assert!(super::acquire_in(dir.path()).is_ok());
    }
}
