//! One module per command.

pub mod doctor;
pub mod ledger;
pub mod sweep;
pub mod worker;

/// Whether process `pid` exists (a process we may not signal still exists).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Opens the ledger and closes the runs of this host whose headroom process died mid-run.
pub fn open_ledger() -> anyhow::Result<headroom_core::ledger::Ledger> {
    use anyhow::Context;
    let ledger = headroom_core::ledger::Ledger::open_default().context("cannot open the ledger")?;
    ledger.close_orphans(&hostname(), process_alive)?;
    Ok(ledger)
}

/// This machine's host name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
