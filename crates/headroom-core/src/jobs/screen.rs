//! The tunnel to a host's screen as the Remote panel opens it ("Open VNC"): a job like the
//! others here, so the tray holds it while the popover is closed.

use std::time::Duration;

use crate::error::ErrorCode;
use crate::jobs::sweep::JobError;
use crate::remote::vnc::Tunnel;

/// The Remote panel's "Open VNC": the tunnel to host `name`'s screen opened and its URL handed
/// to the system's viewer; the tunnel stays until it is dropped (Close tunnel, or Headroom
/// quits). A failure carries the code the UI branches on (`tunnel`, `opener`, …).
pub fn open_screen(name: &str) -> Result<(String, Tunnel), JobError> {
    // Under the edit lock: ssh must know the name before it is used.
    let (p, _) = crate::remote::Hosts::edit(
        &crate::remote::ssh_dir().map_err(JobError::from)?,
        |hosts| Ok(hosts.get(name)?.clone()),
    )
    .map_err(JobError::from)?;
    let t = crate::remote::vnc::open_tunnel(&p, None, Duration::from_secs(15))
        .map_err(JobError::from)?
        .map_err(|f| JobError {
            code: ErrorCode::Tunnel,
            message: format!("{} — {}", f.message, f.fix),
        })?;
    let url = t.url();
    let (mut cmd, _) = crate::remote::vnc::opener(&url);
    // The viewer runs on its own; the tunnel stays until closed.
    cmd.spawn().map_err(|e| JobError {
        code: ErrorCode::Opener,
        message: format!("cannot open {url}: {e}"),
    })?;
    Ok((url, t))
}
