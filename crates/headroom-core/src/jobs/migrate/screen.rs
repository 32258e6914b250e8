//! Step 8, the remote screen: reached through an SSH tunnel to its VNC server.

use super::*;

/// Reads the first line a VNC server sends (`RFB 003.008`) from `port` here, the local end of a
/// tunnel, within `limit`.
pub(super) fn rfb_banner(port: u16, limit: Duration) -> Option<String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    let mut buf = [0u8; 12];
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let line = String::from_utf8_lossy(&buf[..got]).trim().to_owned();
    line.starts_with("RFB ").then_some(line)
}

pub(super) fn screen_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let tunnel = match crate::remote::vnc::open_tunnel(p, None, ctx.timeout) {
        Ok(Ok(t)) => t,
        Ok(Err(f)) => return fail(f.message, f.fix),
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    match rfb_banner(tunnel.local_port, ctx.timeout) {
        Some(banner) => pass(format!(
            "{}'s screen (VNC port {}) answers through an SSH tunnel ({banner}): `headroom remote vnc {}` or Open VNC opens it in the viewer",
            p.name, p.vnc_port, p.name
        )),
        None => fail(
            format!("the tunnel to {} opened, but nothing that speaks VNC answers on its port {}", p.name, p.vnc_port),
            format!("turn on Screen Sharing there (macOS: System Settings → General → Sharing → Screen Sharing), or give the profile its port: `headroom remote add {} … --vnc-port N --replace`", p.name),
        ),
    }
}
