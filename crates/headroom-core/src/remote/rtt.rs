//! The round trip to an artifact store (where checkpoints and datasets live), measured as the
//! time a TCP connection takes to open — one round trip, no protocol on top — from the machine
//! the work runs on. After a move to a remote Mac this is what makes a checkpoint upload slow.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::CoreError;

pub use headroom_model::samples::ArtifactRtt;

/// `host:port`, `[v6]:port`, or a URL whose scheme gives the port (`https://host/…` → 443,
/// `http` 80, `ssh`/`sftp` 22, `s3` 443): the host and port to connect to.
pub fn parse_target(target: &str) -> Result<(String, u16), CoreError> {
    let bad = |why: &str| {
        CoreError::InvalidInput(format!(
            "artifact store {target:?}: {why}; give host:port or a URL such as https://host/path"
        ))
    };
    let t = target.trim();
    let (scheme, rest) = match t.split_once("://") {
        Some((s, r)) => (Some(s.to_ascii_lowercase()), r),
        None => (None, t),
    };
    // Drop the path and any user@ part.
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad("an unclosed [ in the address"))?;
        (h.to_owned(), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        }
    };
    if host.is_empty() || host.starts_with('-') || host.contains(char::is_whitespace) {
        return Err(bad("no host name in it"));
    }
    let port = match (port, scheme.as_deref()) {
        (Some(p), _) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
        (None, Some("https" | "s3" | "gs")) => 443,
        (None, Some("http")) => 80,
        (None, Some("ssh" | "sftp" | "rsync")) => 22,
        (None, _) => {
            return Err(bad(
                "no port: add one (host:port) or use a URL with a known scheme",
            ))
        }
    };
    Ok((host, port))
}

/// Opens `count` TCP connections to `target` one after another (each bounded by `timeout`) and
/// keeps their connect times; `from` names this machine in the result.
#[allow(clippy::cast_precision_loss)]
pub fn measure(target: &str, from: &str, count: u32, timeout: Duration) -> ArtifactRtt {
    let mut out = ArtifactRtt {
        target: target.to_owned(),
        from: from.to_owned(),
        samples_ms: Vec::new(),
        median_ms: None,
        error: None,
    };
    let addr: SocketAddr = match parse_target(target).and_then(|(h, p)| {
        (h.as_str(), p)
            .to_socket_addrs()
            .map_err(|e| CoreError::InvalidInput(format!("cannot resolve {h}: {e}")))?
            .next()
            .ok_or_else(|| CoreError::InvalidInput(format!("{h} has no address")))
    }) {
        Ok(a) => a,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    for _ in 0..count.max(1) {
        let t0 = Instant::now();
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                out.samples_ms.push(t0.elapsed().as_secs_f64() * 1e3);
                drop(s);
            }
            Err(e) => {
                out.error = Some(if e.kind() == std::io::ErrorKind::TimedOut {
                    format!("no answer from {addr} within {} s", timeout.as_secs())
                } else {
                    format!("{addr}: {e}")
                });
                break;
            }
        }
    }
    if !out.samples_ms.is_empty() {
        let mut s = out.samples_ms.clone();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        out.median_ms = Some(if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        });
        // Some connects worked: the median stands, the failure is kept as a note.
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            parse_target("store.lan:9000").unwrap(),
            ("store.lan".into(), 9000)
        );
        assert_eq!(
            parse_target("https://u@s3.example.com/bucket/x?y").unwrap(),
            ("s3.example.com".into(), 443)
        );
        assert_eq!(parse_target("[::1]:8080").unwrap(), ("::1".into(), 8080));
        assert_eq!(parse_target("sftp://nas").unwrap(), ("nas".into(), 22));
        assert!(parse_target("store.lan").is_err());
        assert!(parse_target("host:0").is_err());
        assert!(parse_target("-oProxyCommand=x:22").is_err());
        assert!(parse_target("https://").is_err());
    }

    #[test]
    fn a_listener_here_answers_and_a_closed_port_does_not() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let r = measure(
            &format!("127.0.0.1:{port}"),
            "here",
            4,
            Duration::from_secs(2),
        );
        assert_eq!(r.samples_ms.len(), 4, "{r:?}");
        assert!(r.median_ms.is_some_and(|m| m >= 0.0) && r.error.is_none());
        drop(l);
        let r = measure(
            &format!("127.0.0.1:{port}"),
            "here",
            2,
            Duration::from_secs(2),
        );
        assert!(r.median_ms.is_none());
        assert!(r.describe().contains("unknown"), "{}", r.describe());
    }
}
