//! `headroom remote` against a real OpenSSH server on 127.0.0.1: each test starts its own
//! `sshd` on a free port with a throwaway host key and user key, then adds a profile, checks it
//! (RTT, OS, architecture, the remote headroom and its doctor), and meets each failure: a port
//! nothing listens on, a key the server does not know, a host key that changed, a listener that
//! never speaks — each within its timeout, with its message.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Home;
use crate::sshd::{free_port, keygen, whoami, Sshd};

/// A home whose ssh folder is private to the test.
fn home_with_ssh() -> (Home, PathBuf) {
    let home = Home::new();
    let ssh = home.path().join("ssh");
    (home, ssh)
}

fn remote(home: &Home, ssh: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["remote"];
    all.extend_from_slice(args);
    home.cmd(&all)
        .env("HEADROOM_SSH_DIR", ssh)
        .output()
        .expect("headroom remote")
}

/// Adds profile `name` for the test sshd on `port`, logging in with `key`, headroom being this
/// build.
pub fn add(home: &Home, ssh: &Path, name: &str, port: u16, key: &Path) {
    let out = remote(
        home,
        ssh,
        &[
            "add",
            name,
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--user",
            &whoami(),
            "--identity",
            key.to_str().expect("utf-8"),
            "--headroom-path",
            env!("CARGO_BIN_EXE_headroom"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check(home: &Home, ssh: &Path, name: &str, timeout: u64) -> (Value, Duration) {
    let t = Instant::now();
    let out = remote(
        home,
        ssh,
        &["check", name, "--timeout", &timeout.to_string(), "--json"],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(out.status.success(), v["ok"] == true, "{v}");
    (v, t.elapsed())
}

#[test]
fn a_profile_checked_against_a_real_sshd() {
    let sshd = Sshd::start();
    let (home, ssh) = home_with_ssh();
    add(&home, &ssh, "box", sshd.port, &sshd.userkey());
    let (v, _) = check(&home, &ssh, "box", 10);
    assert_eq!(v["ok"], true, "{v}");
    let rtt = v["rtt_ms"].as_f64().expect("rtt");
    assert!(rtt > 0.0 && rtt < 1000.0, "{v}");
    assert_eq!(v["rtt_samples_ms"].as_array().map(Vec::len), Some(5));
    assert_eq!(v["os"], "Linux");
    let arch = Command::new("uname").arg("-m").output().expect("uname");
    assert_eq!(v["arch"], String::from_utf8_lossy(&arch.stdout).trim());
    assert!(
        v["memory_bytes"].as_u64().is_some_and(|m| m > 1 << 30),
        "{v}"
    );
    assert!(
        v["headroom"]
            .as_str()
            .is_some_and(|h| h.starts_with("headroom ")),
        "{v}"
    );
    let lights = v["doctor_lights"].as_array().expect("doctor lights");
    // Its state depends on the Pythons the remote login finds; the light is there.
    assert!(
        lights
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.starts_with("cpu: "))),
        "{v}"
    );
    // The check is in the ledger, and the decision table's remote column stands on it.
    let d = home.run(&["decide", "--json"]);
    let d: Value = serde_json::from_slice(&d.stdout).expect("decide JSON");
    let remotes = &d["facts"]["remotes"];
    assert_eq!(remotes[0]["name"], "box", "{remotes}");
    assert_eq!(remotes[0]["reachable"], true, "{remotes}");
    let remote_col = d["decision"]["columns"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["column"] == "remote"))
        .expect("remote column");
    assert_eq!(remote_col["status"], "viable", "{remote_col}");
    // The user's own ssh knows the name now, through the managed config.
    let own = Command::new("ssh")
        .args(["-F"])
        .arg(ssh.join("config"))
        .args(["-o", "BatchMode=yes", "-o"])
        .arg(format!(
            "UserKnownHostsFile={}",
            ssh.join("known_hosts").display()
        ))
        .args(["box", "echo", "hello from box"])
        .output()
        .expect("ssh box");
    assert_eq!(
        String::from_utf8_lossy(&own.stdout).trim(),
        "hello from box"
    );
    // list / show / rm, and the managed block goes with the profile.
    let list = remote(&home, &ssh, &["list"]);
    assert!(String::from_utf8_lossy(&list.stdout).starts_with("box "));
    let rm = remote(&home, &ssh, &["rm", "box"]);
    assert!(rm.status.success());
    let managed = std::fs::read_to_string(ssh.join("config.d/headroom")).expect("managed");
    assert!(!managed.contains("Host box"), "{managed}");
}

#[test]
fn a_host_behind_a_jump_host_is_reached_through_it() {
    let sshd = Sshd::start();
    let (home, ssh) = home_with_ssh();
    add(&home, &ssh, "bastion", sshd.port, &sshd.userkey());
    let port = sshd.port.to_string();
    let key = sshd.userkey().display().to_string();
    let user = whoami();
    let with_jump = |name: &str, jump: &str| {
        let out = remote(
            &home,
            &ssh,
            &[
                "add",
                name,
                "--host",
                "127.0.0.1",
                "--port",
                &port,
                "--user",
                &user,
                "--identity",
                &key,
                "--jump",
                jump,
                "--headroom-path",
                env!("CARGO_BIN_EXE_headroom"),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    with_jump("box", "bastion");
    let managed = std::fs::read_to_string(ssh.join("config.d/headroom")).expect("managed config");
    assert!(managed.contains("ProxyJump bastion"), "{managed}");
    // The jump host's key is new too: the jump connection gets batch mode, accept-new and the
    // same known-hosts file (OpenSSH's ProxyJump alone would stop at its host-key prompt).
    let before = sshd.logins();
    let (v, _) = check(&home, &ssh, "box", 10);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["os"], "Linux", "{v}");
    let through = sshd.logins() - before;
    let before = sshd.logins();
    let (v, _) = check(&home, &ssh, "bastion", 10);
    assert_eq!(v["ok"], true, "{v}");
    let direct = sshd.logins() - before;
    assert!(direct >= 2, "probe, round trips, doctor: {direct}");
    assert_eq!(
        through,
        2 * direct,
        "each session through the jump logs in twice"
    );
    // A remote sweep goes through the jump host as well.
    let out = remote(
        &home,
        &ssh,
        &[
            "sweep",
            "box",
            "--device",
            "cpu",
            "--workload",
            "mlp",
            "--batches",
            "1,2",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A jump host that refuses: the message names it.
    with_jump("lost", &format!("127.0.0.1:{}", free_port()));
    let (v, took) = check(&home, &ssh, "lost", 5);
    assert_eq!(v["failure"]["kind"], "refused", "{v}");
    assert!(
        v["failure"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("(through the jump host 127.0.0.1:")),
        "{v}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn each_failure_ends_within_its_timeout_with_its_own_message() {
    let mut sshd = Sshd::start();
    let (home, ssh) = home_with_ssh();
    // Nothing listens: refused at once.
    add(&home, &ssh, "closed", free_port(), &sshd.userkey());
    let (v, took) = check(&home, &ssh, "closed", 5);
    assert_eq!(v["failure"]["kind"], "refused", "{v}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // A key the server does not know.
    let stranger = home.path().join("stranger");
    keygen(&stranger);
    add(&home, &ssh, "wrongkey", sshd.port, &stranger);
    let (v, _) = check(&home, &ssh, "wrongkey", 10);
    assert_eq!(v["failure"]["kind"], "auth", "{v}");
    assert!(
        v["failure"]["fix"]
            .as_str()
            .unwrap_or("")
            .contains("ssh-copy-id"),
        "{v}"
    );
    // A host key that changed since the first check.
    add(&home, &ssh, "box", sshd.port, &sshd.userkey());
    let (v, _) = check(&home, &ssh, "box", 10);
    assert_eq!(v["ok"], true, "{v}");
    sshd.rekey();
    let (v, _) = check(&home, &ssh, "box", 10);
    assert_eq!(v["failure"]["kind"], "host_key_changed", "{v}");
    assert!(
        v["failure"]["fix"]
            .as_str()
            .unwrap_or("")
            .contains("ssh-keygen -R 127.0.0.1"),
        "{v}"
    );
    // A listener that accepts and never speaks: the timeout ends it.
    let silent = TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = silent.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    add(&home, &ssh, "silent", port, &sshd.userkey());
    let (v, took) = check(&home, &ssh, "silent", 2);
    assert_eq!(v["failure"]["kind"], "timeout", "{v}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    // A profile like `host; rm -rf ~` never reaches ssh or a shell.
    let out = remote(&home, &ssh, &["add", "evil", "--host", "host; rm -rf ~"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the host \"host; rm -rf ~\" is refused"));
}

/// The processes sshd started for connections (its children), to drop them mid-run (from
/// /proc: Linux only, as the test that uses it).
#[cfg(target_os = "linux")]
fn sessions_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
                .flat_map(|c| {
                    c.split_whitespace()
                        .filter_map(|p| p.parse().ok())
                        .collect::<Vec<u32>>()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[cfg(target_os = "linux")]
fn a_remote_sweep_lands_in_the_local_ledger_and_a_dropped_link_keeps_its_points() {
    let sshd = Sshd::start();
    let (home, ssh) = home_with_ssh();
    add(&home, &ssh, "box", sshd.port, &sshd.userkey());
    // An artifact store the remote can reach: its round trip is measured there, by the
    // remote's headroom, and lands in this ledger with the run.
    let store = std::net::TcpListener::bind("127.0.0.1:0").expect("store listener");
    let store_at = format!("127.0.0.1:{}", store.local_addr().expect("addr").port());
    let args = [
        "sweep",
        "box",
        "--device",
        "cpu",
        "--workload",
        "mlp",
        "--batches",
        "1,2,4",
        "--steps",
        "5",
        "--threads",
        "1",
        "--artifact-store",
        &store_at,
        "--json",
    ];
    let out = remote(&home, &ssh, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("sweep JSON");
    assert_eq!(v["status"], "complete", "{v}");
    assert_eq!(v["points"].as_array().map(Vec::len), Some(3));
    let runs = home.runs();
    assert_eq!(
        runs[0]["host"], "box",
        "tagged with the remote's name: {}",
        runs[0]
    );
    assert_eq!(runs[0]["points"], 3);
    let dir = home.path().join("export");
    let id = runs[0]["id"].to_string();
    let out = home.run(&[
        "ledger",
        "export",
        &id,
        "--format",
        "json",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("run-{id}.json"))).expect("json"),
    )
    .expect("json parses");
    let rtt = &doc["recorded"]["artifact_rtt"];
    assert_eq!(rtt["from"], "box", "measured on the remote: {rtt}");
    assert_eq!(rtt["target"], store_at.as_str());
    assert_eq!(rtt["samples_ms"].as_array().map(Vec::len), Some(5), "{rtt}");
    assert!(rtt["median_ms"].as_f64().is_some_and(|m| m >= 0.0), "{rtt}");
    // The user's Python is this machine's; a remote run does not claim it.
    assert!(doc["recorded"]["context"]["python"].is_null(), "{doc}");
    // Local against remote: the same sweep here, both drawn side by side, each named by host.
    let local = home.cpu_sweep(&[
        "--workload",
        "mlp",
        "--batches",
        "1,2,4",
        "--steps",
        "5",
        "--threads",
        "1",
    ]);
    let local_id = local["run_id"].to_string();
    let out = home.run(&[
        "ledger",
        "export",
        &local_id,
        &id,
        "--format",
        "svg",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let both = std::fs::read_to_string(dir.join(format!("compare-{local_id}-{id}.svg")))
        .expect("side by side");
    let host = String::from_utf8_lossy(
        &std::process::Command::new("hostname")
            .output()
            .expect("hostname")
            .stdout,
    )
    .trim()
    .to_owned();
    assert!(
        both.contains(&format!("run {id} · box · cpu")),
        "the remote run by its host"
    );
    assert!(
        both.contains(&format!("run {local_id} · {host} · cpu")),
        "the local run by this machine's name"
    );

    // A long sweep whose connection drops after its first point: the points received stay,
    // the run is interrupted, and the note says the link dropped.
    let long = home
        .cmd(&[
            "remote",
            "sweep",
            "box",
            "--device",
            "cpu",
            "--workload",
            "mlp",
            "--batches",
            "1,2,4,8,16,32,64,128",
            "--steps",
            "200",
            "--threads",
            "1",
            "--json",
        ])
        .env("HEADROOM_SSH_DIR", &ssh)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("remote sweep");
    let sshd_pid = sshd.pid().expect("sshd pid");
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let runs = home.runs();
        let points = runs
            .iter()
            .find(|r| r["status"] == "running")
            .and_then(|r| r["points"].as_u64())
            .unwrap_or(0);
        if points >= 1 {
            break;
        }
        assert!(Instant::now() < until, "no point arrived in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    for s in sessions_of(sshd_pid) {
        // SAFETY: kill(2) on a session process of the sshd this test started.
        unsafe { libc::kill(i32::try_from(s).expect("pid"), libc::SIGKILL) };
    }
    let out = long.wait_with_output().expect("remote sweep ends");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = home.runs();
    assert_eq!(runs[0]["status"], "interrupted", "{}", runs[0]);
    assert!(
        runs[0]["points"].as_u64().is_some_and(|n| n >= 1),
        "{}",
        runs[0]
    );
    let note = runs[0]["note"].as_str().unwrap_or("");
    assert!(note.contains("the connection to box"), "{note}");
}

#[test]
fn vnc_opens_a_real_tunnel_to_the_screen_port_and_closes_it_when_the_viewer_is_done() {
    let sshd = Sshd::start();
    let (home, ssh) = home_with_ssh();
    // The "screen": a listener greeting like a VNC server (RFB protocol version line).
    let screen = TcpListener::bind("127.0.0.1:0").expect("screen");
    let vnc_port = screen.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in screen.incoming().flatten() {
            let _ = std::io::Write::write_all(&mut s, b"RFB 003.008\n");
            held.push(s);
        }
    });
    let out = remote(
        &home,
        &ssh,
        &[
            "add",
            "box",
            "--host",
            "127.0.0.1",
            "--port",
            &sshd.port.to_string(),
            "--user",
            &whoami(),
            "--identity",
            sshd.userkey().to_str().expect("utf-8"),
            "--vnc-port",
            &vnc_port.to_string(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The viewer: connects to the URL it is given, reads the greeting, writes it down, quits.
    let seen = home.path().join("seen.txt");
    let viewer = home.path().join("viewer");
    std::fs::write(
        &viewer,
        format!(
            "#!{}\nimport socket, sys\nport = int(sys.argv[1].rsplit(':', 1)[1])\ns = socket.create_connection(('127.0.0.1', port), timeout=5)\nopen({:?}, 'w').write(sys.argv[1] + ' ' + s.recv(12).decode())\n",
            crate::common::python().display(),
            seen.display().to_string()
        ),
    )
    .expect("viewer");
    std::fs::set_permissions(&viewer, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let out = home
        .cmd(&["remote", "vnc", "box"])
        .env("HEADROOM_SSH_DIR", &ssh)
        .env("HEADROOM_OPENER", &viewer)
        .output()
        .expect("remote vnc");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = stdout
        .split_whitespace()
        .next()
        .expect("the URL")
        .to_owned();
    assert!(url.starts_with("vnc://localhost:"), "{stdout}");
    let got = std::fs::read_to_string(&seen).expect("the viewer ran");
    assert_eq!(got, format!("{url} RFB 003.008\n"));
    // The viewer is done, so the tunnel is closed.
    let local: u16 = url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", local)).is_err(),
        "tunnel still open"
    );
    // Without a viewer: the URL, then closed after --for.
    let t = Instant::now();
    let out = home
        .cmd(&["remote", "vnc", "box", "--no-open", "--for", "2"])
        .env("HEADROOM_SSH_DIR", &ssh)
        .output()
        .expect("remote vnc --for");
    assert!(out.status.success());
    assert!(t.elapsed() >= Duration::from_secs(2) && t.elapsed() < Duration::from_secs(20));
    assert!(String::from_utf8_lossy(&out.stdout).contains("tunnel closed after 2 s"));
}

#[test]
fn rtt_to_an_artifact_store_here_and_a_closed_port_says_unknown() {
    let home = Home::new();
    let store = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let at = format!("127.0.0.1:{}", store.local_addr().expect("addr").port());
    let (out, v) = home.json(&["remote", "rtt", &at, "--count", "3", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["samples_ms"].as_array().map(Vec::len), Some(3), "{v}");
    drop(store);
    let out = home.run(&["remote", "rtt", &at]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("unknown") && text.contains("refused"),
        "{text}"
    );
    // Not a target: refused before any connection, with what to give.
    let out = home.run(&["remote", "rtt", "no-port-here"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("host:port"));
}
