//! `headroom remote check`: the system `ssh` (so the user's keys, agent, known_hosts and
//! ProxyJump apply) in batch mode with a timeout. Reachable, authenticated, host key accepted;
//! round-trip time through an open session; the remote's OS, architecture and memory; whether
//! `headroom` is there and its version, and its doctor's lights when it is. Every failure is
//! classified from ssh's own words into one kind with its fix.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::HostProfile;
use crate::child::run_within;
use crate::CoreError;

/// Why a check failed.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Nothing listens on that port (or a firewall rejects).
    Refused,
    /// No answer within the timeout: a black-holed address or a listener that never speaks SSH.
    Timeout,
    /// The name does not resolve.
    UnknownHost,
    /// The server refused every key offered.
    Auth,
    /// The host key differs from the one in known_hosts.
    HostKeyChanged,
    /// Something answered that is not an SSH server, or closed the connection.
    NotSsh,
    /// `ssh` itself is missing.
    NoSsh,
    /// Anything else; the message is ssh's.
    Other,
}

/// A classified failure with what to do.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
    pub fix: String,
}

/// Classifies a failed `ssh` from its stderr (ssh exits 255 on its own errors).
pub fn classify(p: &HostProfile, stderr: &str, timed_out: bool, timeout: Duration) -> Failure {
    // ssh names the address it could not reach, which is the jump host's when that failed.
    let target = stderr
        .lines()
        .find_map(|l| {
            let rest = l.split("connect to host ").nth(1)?;
            let (h, r) = rest.split_once(" port ")?;
            let port: String = r.chars().take_while(char::is_ascii_digit).collect();
            Some(format!("{h}:{port}"))
        })
        .unwrap_or_else(|| format!("{}:{}", p.host, p.port.unwrap_or(22)));
    let target = match &p.jump {
        Some(j) => format!("{target} (through the jump host {j})"),
        None => target,
    };
    let last = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
        .to_owned();
    let has = |s: &str| stderr.contains(s);
    let (kind, message, fix) = if timed_out
        || has("Connection timed out")
        || has("Operation timed out")
    {
        (
            FailureKind::Timeout,
            format!("{target} did not answer within {} s", timeout.as_secs()),
            "check the address and port, that the host is up and that a firewall lets SSH through; a VPN may be needed".to_owned(),
        )
    } else if has("Connection refused") {
        (
            FailureKind::Refused,
            format!("{target} refused the connection: nothing listens there"),
            format!("check the port (`headroom remote add {} --port N --replace`) and that Remote Login (sshd) is on", p.name),
        )
    } else if has("Could not resolve hostname")
        || has("Name or service not known")
        || has("nodename nor servname")
    {
        (
            FailureKind::UnknownHost,
            format!("the host name {} does not resolve", p.host),
            "check the spelling, or use the IP address".to_owned(),
        )
    } else if has("REMOTE HOST IDENTIFICATION HAS CHANGED") || has("Host key verification failed") {
        (
            FailureKind::HostKeyChanged,
            format!("{target} presented a host key that differs from the one known for it"),
            format!("if the host was really reinstalled, remove the old key with `ssh-keygen -R {}` and check again; otherwise do not connect", p.host),
        )
    } else if has("Permission denied") || has("Too many authentication failures") {
        (
            FailureKind::Auth,
            format!("{} refused every key offered", p.target()),
            format!(
                "install your public key on the host (`ssh-copy-id {}`), or name the right key with --identity; passwords are not used",
                p.name
            ),
        )
    } else if has("kex_exchange_identification")
        || has("Connection closed by")
        || has("Connection reset")
        || has("banner exchange")
    {
        (
            FailureKind::NotSsh,
            format!("{target} answered but did not speak SSH ({last})"),
            "check the port: another service may be listening there".to_owned(),
        )
    } else {
        (
            FailureKind::Other,
            if last.is_empty() {
                "ssh failed without a message".to_owned()
            } else {
                last
            },
            "run `ssh -v` with the same host to see more".to_owned(),
        )
    };
    Failure { kind, message, fix }
}

/// How to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Per ssh invocation (connection, authentication, and the probe).
    pub timeout: Duration,
    /// Round trips timed after a warm-up one.
    pub rounds: u32,
    /// Also run the remote's `headroom doctor` when it is installed.
    pub doctor: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            rounds: 5,
            doctor: true,
        }
    }
}

/// What a check found.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub name: String,
    pub target: String,
    pub ok: bool,
    pub failure: Option<Failure>,
    /// Median round trip through an open session, ms.
    pub rtt_ms: Option<f64>,
    pub rtt_samples_ms: Vec<f64>,
    /// Seconds until the first answer (connection, key exchange, authentication, a shell).
    pub connect_s: Option<f64>,
    pub os: Option<String>,
    pub arch: Option<String>,
    pub memory_bytes: Option<u64>,
    /// `headroom --version` on the remote, when it is installed.
    pub headroom: Option<String>,
    /// The remote doctor's lights, `backend: state`.
    pub doctor_lights: Vec<String>,
    pub doctor_error: Option<String>,
}

/// The arguments every Headroom `ssh` call starts with: batch mode (never a prompt), the
/// timeout, new host keys accepted but changed ones refused, and, when the SSH folder is
/// overridden, that folder's config and known_hosts.
pub fn ssh_args(ssh_dir: &Path, overridden: bool, timeout: Duration) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    if overridden {
        a.push("-F".into());
        a.push(ssh_dir.join("config").display().to_string());
    }
    for o in [
        "BatchMode=yes".to_owned(),
        format!("ConnectTimeout={}", timeout.as_secs().max(1)),
        "StrictHostKeyChecking=accept-new".to_owned(),
        "ServerAliveInterval=5".to_owned(),
        "ServerAliveCountMax=3".to_owned(),
    ] {
        a.push("-o".into());
        a.push(o);
    }
    if overridden {
        a.push("-o".into());
        a.push(format!(
            "UserKnownHostsFile={}",
            ssh_dir.join("known_hosts").display()
        ));
    }
    a
}

/// The words of the base `ssh` command for `p` (`ssh` first); the profile name that follows
/// resolves through the managed config. A jump host is reached with the same options as the host
/// itself (see [`proxy_command`]). `batch` false makes a login that may ask for a password
/// (answered by an askpass helper; the jump host stays in batch mode): ssh takes the first value
/// of an option, so `BatchMode=no` goes before the shared options.
pub fn ssh_words(
    p: &HostProfile,
    timeout: Duration,
    batch: bool,
) -> Result<Vec<String>, CoreError> {
    let dir = super::ssh_dir()?;
    let overridden = std::env::var_os(super::SSH_DIR_ENV).is_some_and(|v| !v.is_empty());
    let args = ssh_args(&dir, overridden, timeout);
    let mut words = vec!["ssh".to_owned()];
    if let Some(j) = &p.jump {
        words.push("-o".into());
        words.push(format!("ProxyCommand={}", proxy_command(&args, j)));
    }
    if !batch {
        words.push("-o".into());
        words.push("BatchMode=no".into());
    }
    words.extend(args);
    Ok(words)
}

/// The base `ssh` command for `p` in batch mode ([`ssh_words`]).
pub fn ssh_command(p: &HostProfile, timeout: Duration) -> Result<Command, CoreError> {
    let words = ssh_words(p, timeout, true)?;
    let mut c = Command::new(&words[0]);
    c.args(&words[1..]);
    Ok(c)
}

/// The `ProxyCommand` that reaches the host through `jump` (`[user@]host[:port]`, a profile
/// name or any name the user's ssh config knows) with `base` — batch mode, the connect timeout,
/// the host-key policy and the known-hosts file. OpenSSH's own `ProxyJump` hands none of the
/// command line's `-o` options to the jump connection, so a first connection to the jump host
/// would stop at a host-key prompt that batch mode refuses, and a jump host that never answers
/// would not be bounded by `ConnectTimeout`. The user's own `ssh NAME` still uses the managed
/// config's `ProxyJump`. Every part is quoted for the shell ssh runs it with, `%` doubled.
pub fn proxy_command(base: &[String], jump: &str) -> String {
    let (user, rest) = match jump.split_once('@') {
        Some((u, r)) => (Some(u), r),
        None => (None, jump),
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (rest, None),
    };
    let q = |s: &str| sh_quote(s).replace('%', "%%");
    let mut parts = vec!["ssh".to_owned()];
    parts.extend(base.iter().map(|a| q(a)));
    if let Some(u) = user {
        parts.push(format!("-l {}", q(u)));
    }
    if let Some(p) = port {
        parts.push(format!("-p {}", q(p)));
    }
    parts.push("-W '[%h]:%p' --".to_owned());
    parts.push(q(host));
    parts.join(" ")
}

/// Quotes `s` for the remote POSIX shell (ssh hands the remote command to the login shell).
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Parses the probe's four lines: OS, architecture, memory (`bytes N` or `kB N`), and
/// `headroom --version` or `none`.
pub fn parse_probe(text: &str) -> (Option<String>, Option<String>, Option<u64>, Option<String>) {
    let mut lines = text.lines().map(str::trim);
    let os = lines.next().filter(|l| !l.is_empty()).map(str::to_owned);
    let arch = lines.next().filter(|l| !l.is_empty()).map(str::to_owned);
    // `bytes N` (macOS hw.memsize) or `kB N` (Linux MemTotal).
    let mem = lines.next().and_then(|l| {
        let (unit, n) = l.split_once(' ')?;
        let n: u64 = n.trim().parse().ok()?;
        match unit {
            "bytes" => Some(n),
            "kB" => n.checked_mul(1024),
            _ => None,
        }
    });
    let headroom = lines
        .next()
        .filter(|l| !l.is_empty() && *l != "none")
        .map(str::to_owned);
    (os, arch, mem, headroom)
}

/// The remote `headroom` to call.
pub fn remote_headroom(p: &HostProfile) -> String {
    p.headroom_path.clone().unwrap_or_else(|| "headroom".into())
}

/// Checks profile `p`.
pub fn check(p: &HostProfile, o: &CheckOptions) -> Result<CheckReport, CoreError> {
    let mut r = CheckReport {
        name: p.name.clone(),
        target: format!("{}:{}", p.target(), p.port.unwrap_or(22)),
        ok: false,
        failure: None,
        rtt_ms: None,
        rtt_samples_ms: Vec::new(),
        connect_s: None,
        os: None,
        arch: None,
        memory_bytes: None,
        headroom: None,
        doctor_lights: Vec::new(),
        doctor_error: None,
    };
    let hr = sh_quote(&remote_headroom(p));
    let probe = format!(
        "uname -s; uname -m; (v=$(sysctl -n hw.memsize 2>/dev/null) && echo \"bytes $v\") || awk '/^MemTotal:/ {{print \"kB\", $2}}' /proc/meminfo; ({hr} --version 2>/dev/null || echo none)"
    );
    let mut cmd = ssh_command(p, o.timeout)?;
    cmd.arg(&p.name).arg("--").arg(&probe);
    let started = Instant::now();
    let ran = match run_within(&mut cmd, o.timeout) {
        Ok(x) => x,
        Err(e) => {
            r.failure = Some(Failure {
                kind: FailureKind::NoSsh,
                message: format!("cannot start ssh: {e}; install OpenSSH's client"),
                fix: "install OpenSSH's client (`ssh`)".into(),
            });
            return Ok(r);
        }
    };
    let (stdout, stderr, timed_out) = (ran.stdout, ran.stderr, ran.status.is_none());
    if !ran.status.is_some_and(|s| s.success()) {
        r.failure = Some(classify(p, &stderr, timed_out, o.timeout));
        return Ok(r);
    }
    r.connect_s = Some(started.elapsed().as_secs_f64());
    let (os, arch, mem, headroom) = parse_probe(&stdout);
    (r.os, r.arch, r.memory_bytes, r.headroom) = (os, arch, mem, headroom);
    r.rtt_samples_ms = round_trips(p, o)?;
    let mut sorted = r.rtt_samples_ms.clone();
    sorted.sort_by(f64::total_cmp);
    r.rtt_ms = sorted.get(sorted.len() / 2).copied();
    if r.headroom.is_some() && o.doctor {
        match doctor_lights(p, o.timeout)? {
            Ok(lights) => r.doctor_lights = lights,
            Err(why) => r.doctor_error = Some(why),
        }
    }
    r.ok = true;
    Ok(r)
}

/// The lights of `doctor --json --no-ledger` run by the profile's Headroom on the remote
/// (`cpu: green`), or why it gave none (it did not finish within `timeout` and a minute, or its
/// last line of errors). `Err` only when ssh itself cannot start.
pub fn doctor_lights(
    p: &HostProfile,
    timeout: Duration,
) -> Result<Result<Vec<String>, String>, CoreError> {
    let mut cmd = ssh_command(p, timeout)?;
    cmd.arg(&p.name).arg("--").arg(format!(
        "{} doctor --json --no-ledger",
        sh_quote(&remote_headroom(p))
    ));
    let ran = run_within(&mut cmd, timeout + Duration::from_secs(60)).map_err(|e| {
        CoreError::Worker(format!("cannot start ssh: {e}; install OpenSSH's client"))
    })?;
    let timed_out = ran.timed_out();
    Ok(
        match serde_json::from_str::<serde_json::Value>(&ran.stdout) {
            Ok(v) => Ok(v["lights"]
                .as_array()
                .map(|ls| {
                    ls.iter()
                        .map(|l| {
                            format!(
                                "{}: {}",
                                l["backend"].as_str().unwrap_or("?"),
                                l["state"].as_str().unwrap_or("?")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()),
            Err(_) if timed_out => Err("the remote doctor did not finish in time".into()),
            Err(_) => Err(ran.stderr.lines().last().unwrap_or("no report").to_owned()),
        },
    )
}

/// Times `rounds` line echoes through one open session (after a warm-up round that includes
/// starting the remote shell), in ms.
fn round_trips(p: &HostProfile, o: &CheckOptions) -> Result<Vec<f64>, CoreError> {
    let mut cmd = ssh_command(p, o.timeout)?;
    cmd.arg(&p.name).arg("--").arg("cat");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| CoreError::Worker(format!("cannot start ssh: {e}")))?;
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return Ok(Vec::new());
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(output).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    let mut samples = Vec::new();
    for i in 0..=o.rounds {
        let t = Instant::now();
        if writeln!(input, "ping {i}")
            .and_then(|()| input.flush())
            .is_err()
        {
            break;
        }
        match rx.recv_timeout(o.timeout) {
            Ok(_) if i > 0 => samples.push(t.elapsed().as_secs_f64() * 1e3),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    drop(input);
    let _ = child.kill();
    let _ = child.wait();
    Ok(samples)
}

/// Records a check in the ledger as a `remote-check` run under the profile's name: what the
/// decision table's remote column reads.
pub fn record(ledger: &crate::ledger::Ledger, r: &CheckReport) -> Result<i64, CoreError> {
    let id = ledger.begin_run(&crate::ledger::NewRun {
        kind: crate::ledger::RunKind::RemoteCheck,
        host: r.name.clone(),
        device: "ssh".into(),
        device_name: r.target.clone(),
        workload: "check".into(),
        dtype: None,
        mode: None,
        libtorch: r.headroom.clone().unwrap_or_else(|| "none".into()),
        git_commit: None,
        git_dirty: None,
        budget_bytes: None,
        fallback: None,
        request_json: "{}".into(),
        owner_pid: Some(std::process::id()),
    })?;
    let note = match &r.failure {
        Some(f) => f.message.clone(),
        None => format!(
            "reachable, RTT {:.1} ms, {} {}",
            r.rtt_ms.unwrap_or(0.0),
            r.os.as_deref().unwrap_or("?"),
            r.arch.as_deref().unwrap_or("?")
        ),
    };
    let status = if r.ok {
        crate::ledger::RunStatus::Complete
    } else {
        crate::ledger::RunStatus::Failed
    };
    ledger.finish_report(id, status, &serde_json::to_value(r)?, Some(&note))?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> HostProfile {
        HostProfile {
            port: Some(2222),
            user: Some("ada".into()),
            ..HostProfile::new("m4", "m4.example.com")
        }
    }

    #[test]
    fn ssh_failures_are_named_with_their_fix() {
        let t = Duration::from_secs(3);
        let k = |s: &str| classify(&p(), s, false, t).kind;
        assert_eq!(
            k("ssh: connect to host 127.0.0.1 port 1: Connection refused\r\n"),
            FailureKind::Refused
        );
        assert_eq!(
            k("ada@127.0.0.1: Permission denied (publickey).\r\n"),
            FailureKind::Auth
        );
        assert_eq!(k("@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification failed.\n"), FailureKind::HostKeyChanged);
        assert_eq!(
            k("ssh: Could not resolve hostname nope.invalid: Name or service not known\n"),
            FailureKind::UnknownHost
        );
        assert_eq!(
            k("kex_exchange_identification: Connection closed by remote host\n"),
            FailureKind::NotSsh
        );
        assert_eq!(
            k("ssh: connect to host 10.255.255.1 port 22: Connection timed out\n"),
            FailureKind::Timeout
        );
        let f = classify(&p(), "", true, t);
        assert_eq!(f.kind, FailureKind::Timeout);
        assert!(f.message.contains("within 3 s"), "{}", f.message);
        assert!(classify(&p(), "Permission denied", false, t)
            .fix
            .contains("ssh-copy-id m4"));
    }

    #[test]
    fn a_failure_through_a_jump_host_names_the_address_that_failed_and_the_jump() {
        let mut jumped = p();
        jumped.jump = Some("ops@bastion:2200".into());
        let f = classify(
            &jumped,
            "ssh: connect to host 10.0.0.7 port 2200: Connection refused\r\nConnection closed by UNKNOWN port 65535\r\n",
            false,
            Duration::from_secs(3),
        );
        assert_eq!(f.kind, FailureKind::Refused);
        assert!(
            f.message
                .starts_with("10.0.0.7:2200 (through the jump host ops@bastion:2200) refused"),
            "{}",
            f.message
        );
        let plain = classify(&p(), "", true, Duration::from_secs(3));
        assert!(
            plain.message.starts_with("m4.example.com:2222 did not"),
            "{}",
            plain.message
        );
    }

    #[test]
    fn the_jump_connection_gets_the_same_options_quoted_for_the_shell() {
        let base = ssh_args(Path::new("/home/a b/ssh%1"), true, Duration::from_secs(7));
        let cmd = proxy_command(&base, "ops@bastion.example.com:2200");
        assert_eq!(
            cmd,
            "ssh '-F' '/home/a b/ssh%%1/config' '-o' 'BatchMode=yes' '-o' 'ConnectTimeout=7' \
             '-o' 'StrictHostKeyChecking=accept-new' '-o' 'ServerAliveInterval=5' \
             '-o' 'ServerAliveCountMax=3' '-o' 'UserKnownHostsFile=/home/a b/ssh%%1/known_hosts' \
             -l 'ops' -p '2200' -W '[%h]:%p' -- 'bastion.example.com'"
        );
        // A profile name (resolved by the managed config), with or without a user.
        assert_eq!(
            proxy_command(&[], "bastion"),
            "ssh -W '[%h]:%p' -- 'bastion'"
        );
        assert_eq!(
            proxy_command(&[], "ops@bastion"),
            "ssh -l 'ops' -W '[%h]:%p' -- 'bastion'"
        );
    }

    #[test]
    fn the_probe_and_quoting() {
        let (os, arch, mem, hr) = parse_probe("Darwin\narm64\nbytes 34359738368\nheadroom 0.1.0\n");
        assert_eq!(
            (os.as_deref(), arch.as_deref(), mem, hr.as_deref()),
            (
                Some("Darwin"),
                Some("arm64"),
                Some(34_359_738_368),
                Some("headroom 0.1.0")
            )
        );
        let linux = parse_probe("Linux\nx86_64\nkB 24557908\nnone\n");
        assert_eq!((linux.2, linux.3), (Some(24_557_908 * 1024), None));
        assert_eq!(
            sh_quote("/opt/my tools/headroom"),
            "'/opt/my tools/headroom'"
        );
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
    }
}
