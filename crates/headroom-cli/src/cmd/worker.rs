//! `headroom worker [--doctor]`: hands the process over to `headroom-worker` beside this binary,
//! the one that links libtorch, with the same stdin and stdout. Every caller (sweeps here, the
//! app, a remote host's `headroom worker` over ssh) keeps starting `headroom worker`; only the
//! process that measures loads libtorch.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use headroom_core::jobs;
use headroom_model::protocol::Event;

/// The libtorch worker beside this `headroom`.
fn torch_worker() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    jobs::torch_worker_beside(&exe).map_err(|e| e.to_string())
}

pub fn exec(doctor: bool) -> ExitCode {
    let worker = match torch_worker() {
        Ok(w) => w,
        Err(message) => return refuse(doctor, &message),
    };
    let mut cmd = Command::new(&worker);
    if doctor {
        cmd.arg("--doctor");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Only returns on failure.
        let e = cmd.exec();
        refuse(doctor, &format!("cannot start {}: {e}", worker.display()))
    }
    #[cfg(not(unix))]
    match cmd.status() {
        Ok(s) => ExitCode::from(u8::try_from(s.code().unwrap_or(2)).unwrap_or(2)),
        Err(e) => refuse(doctor, &format!("cannot start {}: {e}", worker.display())),
    }
}

/// Says why no worker runs: as a protocol error event for a job (the parent shows it), on
/// stderr for `--doctor`.
fn refuse(doctor: bool, message: &str) -> ExitCode {
    if doctor {
        eprintln!("headroom worker: {message}");
    } else {
        println!(
            "{}",
            Event::Error {
                code: headroom_store::error::ErrorCode::NoWorker,
                message: message.to_owned(),
            }
            .to_line()
        );
    }
    ExitCode::from(2)
}

/// The libtorch `headroom-worker --version` reports, or why it cannot be known.
pub fn libtorch_version() -> String {
    let worker = match torch_worker() {
        Ok(w) => w,
        Err(e) => return format!("unknown: {e}"),
    };
    match Command::new(&worker).arg("--version").output() {
        Ok(o) if o.status.success() => {
            let line = String::from_utf8_lossy(&o.stdout);
            jobs::libtorch_in_version(&line)
                .unwrap_or_else(|| format!("unknown: {} said {:?}", worker.display(), line.trim()))
        }
        Ok(o) => format!(
            "unknown: {} --version failed ({}): {}",
            worker.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("unknown: cannot start {}: {e}", worker.display()),
    }
}
