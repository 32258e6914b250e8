//! The VNC handoff: an SSH tunnel from a local port to the remote's VNC (Screen Sharing) port,
//! and the `vnc://localhost:PORT` URL handed to the OS. The tunnel lives as long as its handle.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::check::{classify, ssh_command, Failure};
use super::HostProfile;
use crate::CoreError;

/// Overrides the program that opens the `vnc://` URL (tests; other viewers).
pub const OPENER_ENV: &str = "HEADROOM_OPENER";

/// An open tunnel; dropping it closes it.
#[derive(Debug)]
pub struct Tunnel {
    child: Child,
    pub local_port: u16,
}

impl Tunnel {
    /// The URL a VNC viewer opens.
    pub fn url(&self) -> String {
        format!("vnc://localhost:{}", self.local_port)
    }

    /// Whether the ssh carrying the tunnel is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, CoreError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| CoreError::Worker(format!("no free local port: {e}")))
}

/// Opens `ssh -N -L 127.0.0.1:LOCAL:localhost:VNC NAME` and waits until the local end accepts.
pub fn open_tunnel(
    p: &HostProfile,
    local_port: Option<u16>,
    timeout: Duration,
) -> Result<Result<Tunnel, Failure>, CoreError> {
    open_tunnel_to(p, p.vnc_port, local_port, timeout)
}

/// Opens `ssh -N -L 127.0.0.1:LOCAL:localhost:REMOTE NAME` (any port there: TensorBoard's,
/// a notebook's) and waits until the local end accepts.
pub fn open_tunnel_to(
    p: &HostProfile,
    remote_port: u16,
    local_port: Option<u16>,
    timeout: Duration,
) -> Result<Result<Tunnel, Failure>, CoreError> {
    let port = match local_port {
        Some(p) => p,
        None => free_port()?,
    };
    let mut cmd = ssh_command(p, timeout)?;
    cmd.args(["-N", "-o", "ExitOnForwardFailure=yes", "-L"])
        .arg(format!("127.0.0.1:{port}:localhost:{remote_port}"))
        .arg(&p.name)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| CoreError::Worker(format!("cannot start ssh: {e}")))?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(_status) = child
            .try_wait()
            .map_err(|e| CoreError::Worker(e.to_string()))?
        {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return Ok(Err(classify(p, &err, false, timeout)));
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            // ssh's stderr is no longer needed; keep it from filling up.
            drop(child.stderr.take());
            return Ok(Ok(Tunnel {
                child,
                local_port: port,
            }));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Err(classify(p, "", true, timeout)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How the URL is opened: `$HEADROOM_OPENER URL`, macOS `open -W URL` (returns when Screen
/// Sharing quits), else `xdg-open URL`. The flag says whether the program's exit means the
/// viewer is done.
pub fn opener(url: &str) -> (Command, bool) {
    if let Some(o) = std::env::var_os(OPENER_ENV).filter(|v| !v.is_empty()) {
        let mut c = Command::new(o);
        c.arg(url);
        return (c, true);
    }
    if cfg!(target_os = "macos") {
        let mut c = Command::new("/usr/bin/open");
        c.args(["-W", url]);
        (c, true)
    } else {
        let mut c = Command::new("xdg-open");
        c.arg(url);
        (c, false)
    }
}
