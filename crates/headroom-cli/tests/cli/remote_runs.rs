//! Training on a remote host that outlives the connection, against a real sshd on 127.0.0.1 and
//! a fresh user (its own empty home, Headroom copied there as the migration's headroom step
//! leaves it): `remote run` starts the project's command detached and returns at once; the
//! training finishes there though the local `headroom` and its ssh are killed and the server
//! itself goes away; `remote runs` then shows it complete and the local ledger holds it once,
//! with every epoch once; `attach` follows a running one and Ctrl-C leaves it running; `stop`
//! ends it and every process of its group there.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Home;
use crate::sshd::{FreshUser, Sshd};

/// The training there: as many epochs as `length.txt` says, five steps each of the seconds it
/// says, its pid written first.
const TRAIN: &str = r#"import os, time
with open('length.txt') as f:
    epochs, step_s = f.read().split()
with open('pid', 'w') as f:
    f.write(str(os.getpid()))
for e in range(1, int(epochs) + 1):
    print(f'epoch {e}', flush=True)
    for i in range(5):
        time.sleep(float(step_s))
        print('headroom-step', flush=True)
print('trained', flush=True)
"#;

fn cmd(home: &Home, args: &[&str]) -> Command {
    let mut c = home.cmd(args);
    c.env("HEADROOM_SSH_DIR", home.path().join("ssh"));
    c
}

fn ok(home: &Home, args: &[&str]) -> Output {
    let out = cmd(home, args).output().expect("headroom");
    assert!(
        out.status.success(),
        "headroom {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(home: &Home, args: &[&str]) -> Value {
    let out = ok(home, args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `headroom remote runs box --json`, the run `id` in it.
fn run_there(home: &Home, id: &str) -> Value {
    let all = json(home, &["remote", "runs", "box", "--json"]);
    all.as_array()
        .and_then(|a| a.iter().find(|r| r["meta"]["id"] == id).cloned())
        .unwrap_or_else(|| panic!("run {id} not listed: {all}"))
}

/// Polls `remote runs` until run `id` reads `state` (or panics after `limit`).
fn wait_for(home: &Home, id: &str, state: &str, limit: Duration) -> Value {
    let until = Instant::now() + limit;
    loop {
        let r = run_there(home, id);
        if r["state"] == state {
            return r;
        }
        assert!(Instant::now() < until, "run {id} never became {state}: {r}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `remote attach box ID` in a process group of its own (as a terminal's foreground job),
/// its output read until a line contains `until`.
fn attach_until(home: &Home, id: &str, until: &str) -> (Child, Vec<String>) {
    let mut child = cmd(home, &["remote", "attach", "box", id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("attach");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen.iter().any(|l: &String| l.contains(until)) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => seen.push(l),
            Err(_) => panic!("attach never showed {until:?}: {seen:?}"),
        }
    }
    (child, seen)
}

fn signal_group(child: &Child, sig: i32) {
    let pgid = i32::try_from(child.id()).expect("pid");
    // SAFETY: a plain kill(2) of the test's own child's group.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// Whether any process of group `pgid` is alive (not a zombie).
fn group_alive(pgid: u64) -> bool {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(Result::ok)
        .any(|e| {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                return false;
            };
            let rest: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            rest.len() > 2 && rest[0] != "Z" && rest[2] == pgid.to_string()
        })
}

fn pid_alive(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
    stat.is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// The ledger's rows for host `box`.
fn rows_here(home: &Home) -> Vec<Value> {
    home.runs()
        .into_iter()
        .filter(|r| r["host"] == "box")
        .collect()
}

fn epochs_here(home: &Home, id: i64) -> usize {
    let shown = json(home, &["ledger", "show", &id.to_string(), "--json"]);
    shown["samples"].as_array().map_or(0, Vec::len)
}

/// Adds host profile `box` for the test sshd, logging in as `user` with its key; `extra` are
/// more `remote add` options.
fn add_box(home: &Home, sshd: &Sshd, user: &str, extra: &[&str]) {
    add_host(home, sshd, "box", user, extra);
}

/// Adds host profile `name` for the test sshd, as [`add_box`].
fn add_host(home: &Home, sshd: &Sshd, name: &str, user: &str, extra: &[&str]) {
    let port = sshd.port.to_string();
    let key = sshd.userkey();
    let mut args = vec![
        "remote",
        "add",
        name,
        "--host",
        "127.0.0.1",
        "--port",
        &port,
        "--user",
        user,
        "--identity",
        key.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    ok(home, &args);
}

/// Project `train` here: a folder `proj` and the command `python3 train.py` with `extra`.
fn add_train_project(home: &Home, extra: &[&str]) -> std::path::PathBuf {
    let proj = home.path().join("proj");
    std::fs::create_dir_all(&proj).expect("proj");
    let python = crate::common::python().display().to_string();
    let mut args = vec![
        "project",
        "add",
        "train",
        "--dir",
        proj.to_str().expect("utf-8"),
        "--python",
        &python,
        "--",
        "python3",
        "train.py",
    ];
    args.extend_from_slice(extra);
    ok(home, &args);
    proj
}

/// The migration of `train` to `box` as far as its project step, its folder there `remote_dir`.
fn migrated_to_box(home: &Home, remote_dir: &str) {
    let passed = |step: &str| {
        serde_json::json!({"step": step, "passed": true, "detail": "set up by the test",
                           "fix": null, "at": "2026-12-05T00:00:00Z", "seconds": 0.0, "runs": []})
    };
    let state = serde_json::json!({
        "host": "box", "project": "train", "remote_dir": remote_dir,
        "also_copy": [],
        "steps": {"host": passed("host"), "key": passed("key"), "check": passed("check"),
                  "headroom": passed("headroom"), "project": passed("project")},
    });
    std::fs::create_dir_all(home.path().join("migrations")).expect("migrations");
    std::fs::write(
        home.path().join("migrations/box--train.json"),
        serde_json::to_vec(&state).expect("json"),
    )
    .expect("state");
}

/// As the migration leaves a host: Headroom in `~/.headroom/bin`, the project in
/// `~/headroom-projects/train` with its `.venv`; here the project and the host profile, and the
/// migration's steps up to the project passed.
fn set_up(user: &FreshUser, sshd: &Sshd, home: &Home) -> std::path::PathBuf {
    let bin = user.home.join(".headroom/bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::fs::copy(env!("CARGO_BIN_EXE_headroom"), bin.join("headroom")).expect("headroom");
    let there = user.home.join("headroom-projects/train");
    std::fs::create_dir_all(&there).expect("there");
    std::fs::write(there.join("train.py"), TRAIN).expect("train.py");
    std::fs::write(there.join("length.txt"), "4 0.25\n").expect("length");
    let made = Command::new("chown")
        .args(["-R", &format!("{0}:{0}", user.name)])
        .arg(user.home.join(".headroom"))
        .arg(user.home.join("headroom-projects"))
        .status()
        .expect("chown");
    assert!(made.success());
    let venv = user.sh("cd ~/headroom-projects/train && python3 -m venv --without-pip .venv");
    assert!(
        venv.status.success(),
        "{}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let proj = add_train_project(home, &[]);
    std::fs::write(proj.join("train.py"), TRAIN).expect("train.py");
    let headroom_there = bin.join("headroom").display().to_string();
    add_box(
        home,
        sshd,
        &user.name,
        &["--headroom-path", &headroom_there],
    );
    migrated_to_box(home, "headroom-projects/train");
    there
}

#[test]
fn a_run_there_outlives_the_connection_and_lands_here_once_with_every_epoch() {
    let Some(user) = FreshUser::create() else {
        return;
    };
    let mut sshd = Sshd::start();
    let home = Home::new();
    let there = set_up(&user, &sshd, &home);

    // Started detached: it returns at once with the run's id, recorded here as running.
    let t = Instant::now();
    let started = json(
        &home,
        &["remote", "run", "box", "--project", "train", "--json"],
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let id = started["run"]["id"].as_str().expect("id").to_owned();
    let row = started["ledger_run_id"].as_i64().expect("recorded here");
    let rows = rows_here(&home);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "running", "{rows:?}");

    // Followed live; then the local headroom and its ssh are killed, and the server goes away
    // (the laptop closed, the Wi-Fi gone).
    let (attach, seen) = attach_until(&home, &id, "epoch 2");
    assert!(seen.iter().any(|l| l.contains("epoch 1")), "{seen:?}");
    signal_group(&attach, libc::SIGKILL);
    sshd.stop();
    let pid = std::fs::read_to_string(there.join("pid")).expect("the training's pid");
    assert!(pid_alive(&pid), "it trains on without the connection");
    let until = Instant::now() + Duration::from_secs(60);
    while pid_alive(&pid) {
        assert!(Instant::now() < until, "the training never ended");
        std::thread::sleep(Duration::from_millis(200));
    }

    // Back: the run reads complete, and its epochs land here once, however often it is read.
    sshd.restart();
    let r = wait_for(&home, &id, "complete", Duration::from_secs(30));
    assert_eq!(
        r["result"]["epochs"].as_array().map(Vec::len),
        Some(4),
        "{r}"
    );
    assert_eq!(r["result"]["steps"], 20, "{r}");
    assert_eq!(
        r["last_line"].as_str().map(str::trim),
        Some("trained"),
        "{r}"
    );
    assert_eq!(r["ledger_run_id"], row, "{r}");
    let _ = json(&home, &["remote", "runs", "box", "--json"]);
    let rows = rows_here(&home);
    assert_eq!(rows.len(), 1, "one row however often it is read: {rows:?}");
    assert_eq!(rows[0]["status"], "complete", "{rows:?}");
    assert_eq!(epochs_here(&home, row), 4, "every epoch once");
    // Read for people: the state, its epoch and steps, the last line.
    let said = String::from_utf8_lossy(&ok(&home, &["remote", "runs", "box"]).stdout).to_string();
    assert!(
        said.contains(&id)
            && said.contains("complete")
            && said.contains("epoch 4")
            && said.contains("20 steps")
            && said.contains("> trained"),
        "{said}"
    );

    // A long one: attach, Ctrl-C (to the whole foreground job) stops following, not the run.
    std::fs::write(there.join("length.txt"), "200 0.2\n").expect("length");
    let second = json(
        &home,
        &["remote", "run", "box", "--project", "train", "--json"],
    );
    let id2 = second["run"]["id"].as_str().expect("id").to_owned();
    let pgid = second["run"]["pid"].as_u64().expect("its group");
    let (mut attach, _) = attach_until(&home, &id2, "epoch 1");
    signal_group(&attach, libc::SIGINT);
    let until = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = attach.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < until, "attach did not end on Ctrl-C");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    if let Some(mut e) = attach.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(
        status.success() && err.contains("goes on"),
        "{status:?}: {err}"
    );
    let r = run_there(&home, &id2);
    assert_eq!(r["state"], "running", "{r}");
    let pid2 = std::fs::read_to_string(there.join("pid")).expect("pid");
    assert!(pid_alive(&pid2) && group_alive(pgid));

    // Stopped: the training and every process of its group there end; kept as interrupted,
    // here too.
    let stopped = json(&home, &["remote", "stop", "box", &id2, "--json"]);
    assert_eq!(stopped["state"], "interrupted", "{stopped}");
    assert!(!pid_alive(&pid2), "the training ended");
    assert!(!group_alive(pgid), "nothing of its group is left");
    let rows = rows_here(&home);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let mirrored = rows
        .iter()
        .find(|r| r["id"] == stopped["ledger_run_id"])
        .expect("the stopped run here");
    assert_eq!(mirrored["status"], "interrupted", "{mirrored}");
}

#[test]
fn a_remote_run_refused_says_what_to_do_and_starts_nothing() {
    let home = Home::new();
    let sshd = Sshd::start();
    add_train_project(&home, &["--batch-size", "{batch}"]);
    add_box(&home, &sshd, &crate::sshd::whoami(), &[]);
    // The migration has not brought the project there yet.
    let out = cmd(&home, &["remote", "run", "box", "--project", "train"])
        .output()
        .expect("headroom");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("needs step host")
            && err.contains("headroom remote migrate box --project train"),
        "{err}"
    );
    // A run id that is none.
    let out = cmd(&home, &["remote", "stop", "box", "../etc"])
        .output()
        .expect("headroom");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("not a detached run's id"),
        "{err}"
    );
    assert!(home.runs().is_empty(), "nothing ran, nothing recorded");
}

/// Each way a run there cannot start or be listed, through a real ssh to a real sshd, says what
/// went wrong and what to do: the host unreachable, Headroom missing there, the disk there full,
/// the project's folder gone.
#[test]
fn each_failure_there_says_what_to_do() {
    let home = Home::new();
    let sshd = Sshd::start();
    let me = crate::sshd::whoami();
    let err_of = |args: &[&str]| {
        let out = cmd(&home, args).output().expect("headroom");
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // Nothing listens on the host's port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    let port = closed.local_addr().expect("addr").port().to_string();
    drop(closed);
    let key = sshd.userkey();
    ok(
        &home,
        &[
            "remote",
            "add",
            "off",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--user",
            &me,
            "--identity",
            key.to_str().expect("utf-8"),
        ],
    );
    let err = err_of(&["remote", "runs", "off"]);
    assert!(err.contains("refused the connection"), "{err}");
    // Headroom is not where the profile says.
    add_host(
        &home,
        &sshd,
        "bare",
        &me,
        &["--headroom-path", "/nonexistent/bin/headroom"],
    );
    let err = err_of(&["remote", "runs", "bare"]);
    assert!(
        err.contains("Headroom is missing on bare")
            && err.contains("headroom remote migrate bare --project P --step headroom"),
        "{err}"
    );
    // Its disk is full: Headroom there says so (a stand-in that fails as a full disk makes it).
    let full = home.path().join("full-headroom");
    std::fs::write(
        &full,
        "#!/bin/sh\necho 'headroom: error: cannot write the run folder: No space left on device (os error 28)' >&2\nexit 1\n",
    )
    .expect("stand-in");
    std::fs::set_permissions(&full, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    add_host(
        &home,
        &sshd,
        "full",
        &me,
        &["--headroom-path", full.to_str().expect("utf-8")],
    );
    let err = err_of(&["remote", "runs", "full"]);
    assert!(
        err.contains("the disk on full is full") && err.contains("free space there"),
        "{err}"
    );
    // The project's folder there is gone since the migration copied it.
    add_train_project(&home, &[]);
    add_box(
        &home,
        &sshd,
        &me,
        &["--headroom-path", env!("CARGO_BIN_EXE_headroom")],
    );
    migrated_to_box(&home, &format!("headroom-test-gone-{}", std::process::id()));
    let err = err_of(&["remote", "run", "box", "--project", "train"]);
    assert!(
        err.contains("the project's folder is gone on box")
            && err.contains("headroom remote migrate box --project P --step project"),
        "{err}"
    );
    assert!(home.runs().is_empty(), "nothing ran, nothing recorded");
}

#[test]
fn a_port_there_is_forwarded_here_until_its_time_is_up() {
    use std::io::{Read, Write};
    let home = Home::new();
    let sshd = Sshd::start();
    add_box(&home, &sshd, &crate::sshd::whoami(), &[]);
    // "TensorBoard" there: a listener that answers each connection with one line.
    let board = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let there = board.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for c in board.incoming().flatten() {
            let mut c = c;
            let _ = c.write_all(b"tensorboard here\n");
        }
    });
    let local = crate::sshd::free_port();
    let mut tunnel = cmd(
        &home,
        &[
            "remote",
            "tunnel",
            "box",
            &there.to_string(),
            "--local",
            &local.to_string(),
            "--for",
            "4",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("tunnel");
    let until = Instant::now() + Duration::from_secs(15);
    let said = loop {
        if let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", local)) {
            let mut text = String::new();
            let _ = c.read_to_string(&mut text);
            if !text.is_empty() {
                break text;
            }
        }
        assert!(Instant::now() < until, "the tunnel never answered");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(said, "tensorboard here\n");
    let out = tunnel.wait().expect("tunnel ends");
    assert!(out.success(), "it closes after --for");
    let mut printed = String::new();
    if let Some(mut o) = tunnel.stdout.take() {
        let _ = o.read_to_string(&mut printed);
    }
    assert!(
        printed.contains(&format!("http://localhost:{local}")) && printed.contains("tunnel closed"),
        "{printed}"
    );
}
