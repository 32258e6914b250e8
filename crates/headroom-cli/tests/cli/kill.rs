//! A worker killed with SIGKILL mid-sweep: the parent survives, the points finished before the
//! kill are in the ledger, and the run is marked interrupted.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::{points, Home};

fn children_of(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// Starts a slow CPU sweep over `batches` (its output captured or discarded; `env` set for it)
/// and returns once `n` of its points are in the ledger.
fn sweep_until_points(
    home: &Home,
    batches: &str,
    n: u64,
    capture: bool,
    env: &[(&str, &str)],
) -> Child {
    let args = [
        "sweep",
        "--device",
        "cpu",
        "--workload",
        "mlp",
        "--batches",
        batches,
        "--steps",
        "150",
        "--json",
    ];
    let io = || {
        if capture {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    let child = home
        .cmd(&args)
        .envs(env.iter().copied())
        .stdout(io())
        .stderr(io())
        .spawn()
        .expect("start sweep");
    let started = Instant::now();
    while home
        .runs()
        .first()
        .and_then(|r| r["points"].as_u64())
        .unwrap_or(0)
        < n
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "fewer than {n} points after two minutes"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

#[test]
fn a_worker_killed_mid_sweep_leaves_its_points_in_the_ledger() {
    let home = Home::new();
    let parent = sweep_until_points(&home, "1,2,3,4,5,6,7,8,9,10,11,12", 2, true, &[]);
    let workers = children_of(parent.id());
    assert_eq!(
        workers.len(),
        1,
        "one worker child expected, found {workers:?}"
    );
    // SAFETY: plain kill(2) on a child pid we just read.
    assert_eq!(unsafe { libc::kill(workers[0] as i32, libc::SIGKILL) }, 0);

    let out = parent.wait_with_output().expect("wait for sweep");
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the parent still prints its JSON");
    assert_eq!(
        out.status.code(),
        Some(3),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["status"], "interrupted");
    let got = points(&v);
    assert!(got.len() >= 2 && got.len() < 12, "{} points", got.len());
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("signal 9"),
        "{v}"
    );

    let runs = home.runs();
    assert_eq!(runs[0]["status"], "interrupted");
    assert_eq!(runs[0]["points"].as_u64(), Some(got.len() as u64));
    assert!(runs[0]["note"].as_str().unwrap_or("").contains("SIGKILL"));
    let id = runs[0]["id"].to_string();
    let (_, shown) = home.json(&["ledger", "show", &id, "--json"]);
    assert_eq!(shown["points"].as_array().map(Vec::len), Some(got.len()));
    for p in shown["points"].as_array().into_iter().flatten() {
        assert_eq!(p["status"], "ok");
    }

    // A new run starts cleanly afterwards.
    let v = home.cpu_sweep(&["--workload", "mlp", "--batches", "2", "--steps", "2"]);
    assert_eq!(v["status"], "complete");
}

/// A signal to `headroom sweep`'s own pid (`kill -INT PID`, a job runner's SIGTERM) stops its
/// worker too, though the worker never saw it: the run ends interrupted, its points kept.
#[test]
fn a_signal_to_the_sweeps_own_pid_stops_its_worker() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let home = Home::new();
        let parent = sweep_until_points(&home, "1,2,3,4,5,6,7,8,9,10,11,12", 1, true, &[]);
        let workers = children_of(parent.id());
        assert_eq!(workers.len(), 1, "one worker expected, found {workers:?}");
        // SAFETY: plain kill(2) on the child we started.
        assert_eq!(unsafe { libc::kill(parent.id() as i32, sig) }, 0);
        let started = Instant::now();
        let out = parent.wait_with_output().expect("wait for sweep");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "signal {sig}: the sweep took {:?} to stop",
            started.elapsed()
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("its JSON");
        assert_eq!(v["status"], "interrupted", "signal {sig}: {v}");
        assert!(!points(&v).is_empty(), "{v}");
        assert!(
            !std::path::Path::new(&format!("/proc/{}", workers[0])).exists()
                || std::fs::read_to_string(format!("/proc/{}/stat", workers[0]))
                    .is_ok_and(|s| s.contains(") Z ")),
            "signal {sig}: the worker {} still runs",
            workers[0]
        );
        assert_eq!(home.runs()[0]["status"], "interrupted");
    }
}

#[test]
fn a_run_whose_headroom_process_was_killed_is_closed_as_interrupted() {
    let home = Home::new();
    let mut parent = sweep_until_points(&home, "1,2,3,4,5,6,7,8", 1, false, &[]);
    let worker = children_of(parent.id());
    parent.kill().expect("SIGKILL the parent");
    parent.wait().expect("reap the parent");
    // The orphaned worker notices its reader is gone at its next write and exits.
    let gone = Instant::now();
    while worker
        .iter()
        .any(|pid| std::path::Path::new(&format!("/proc/{pid}/status")).exists())
    {
        assert!(
            gone.elapsed() < Duration::from_secs(60),
            "the orphaned worker kept running"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let runs = home.runs();
    assert_eq!(runs[0]["status"], "interrupted", "{}", runs[0]);
    assert!(runs[0]["note"]
        .as_str()
        .unwrap_or("")
        .contains("ended without closing the run"));
    assert!(runs[0]["points"].as_u64().unwrap_or(0) >= 1);
}

#[test]
fn a_worker_that_stops_answering_is_ended_and_its_points_kept() {
    // SIGSTOP freezes the worker whole (its heartbeat thread too): the parent hears nothing
    // for the silence limit (3 s here, 60 s by default), ends it, and keeps what it measured.
    let home = Home::new();
    let parent = sweep_until_points(
        &home,
        "1,2,3,4,5,6,7,8,9,10,11,12",
        1,
        true,
        &[("HEADROOM_WORKER_SILENCE_S", "3")],
    );
    let workers = children_of(parent.id());
    assert_eq!(workers.len(), 1, "{workers:?}");
    // SAFETY: plain kill(2) on a child pid we just read.
    assert_eq!(unsafe { libc::kill(workers[0] as i32, libc::SIGSTOP) }, 0);
    let stopped = Instant::now();
    let out = parent.wait_with_output().expect("wait for sweep");
    let waited = stopped.elapsed();
    assert!(
        waited < Duration::from_secs(15),
        "ended {waited:?} after the worker froze"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["status"], "interrupted", "{v}");
    let note = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        note.contains("no output for 3 s, not even its heartbeat"),
        "{note}"
    );
    let runs = home.runs();
    assert_eq!(runs[0]["status"], "interrupted");
    assert!(runs[0]["points"].as_u64().is_some_and(|n| n >= 1));
    // A healthy worker whose steps are longer than the limit is not ended: its heartbeat keeps
    // it alive (cnn at batch 512 on one thread: 6–8 s a step here, against 3 s; batch 256 took
    // 2.9–4 s, too close to the limit on a quiet machine).
    let out = home
        .cmd(&[
            "sweep",
            "--device",
            "cpu",
            "--workload",
            "cnn",
            "--batches",
            "512",
            "--steps",
            "1",
            "--threads",
            "1",
            "--json",
        ])
        .env("HEADROOM_WORKER_SILENCE_S", "3")
        .output()
        .expect("sweep");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["status"], "complete", "{v}");
    let step = v["points"][0]["step_ms_p50"].as_f64().unwrap_or(0.0);
    assert!(
        step > 3000.0,
        "the steps must outlast the limit for this to prove anything: {step} ms"
    );
}

/// Counts and checks rows of the ledger with Python's sqlite3 (another SQLite than Headroom's):
/// the integrity check, and per run the epoch numbers recorded.
fn ledger_rows(home: &Home) -> serde_json::Value {
    let script = r#"
import json, sqlite3, sys
try:
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    check = db.execute("PRAGMA integrity_check").fetchone()[0]
    db.execute("SELECT 1 FROM samples LIMIT 1").fetchall()
except sqlite3.OperationalError as e:
    print(json.dumps({"check": str(e), "epochs": {}, "status": {}}))
    sys.exit(0)
runs = {}
for run_id, seq in db.execute("SELECT run_id, seq FROM samples WHERE kind = 'epoch' ORDER BY run_id, seq"):
    runs.setdefault(str(run_id), []).append(seq - 100000)
status = {str(i): s for i, s in db.execute("SELECT id, status FROM runs")}
print(json.dumps({"check": check, "epochs": runs, "status": status}))
"#;
    let out = std::process::Command::new(crate::common::python())
        .args(["-c", script])
        .arg(home.path().join("ledger.sqlite3"))
        .output()
        .expect("python sqlite3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("rows JSON")
}

#[test]
fn two_writers_at_once_and_one_killed_mid_write_lose_no_row() {
    // Two `headroom run`s write to one ledger at once, each an epoch sample per line as fast as
    // Python prints them; one is killed with SIGKILL mid-stream. The other's 3000 rows are all
    // there, the killed one's rows are 1..k without a gap, the file passes SQLite's integrity
    // check, and neither saw "database is locked".
    let home = Home::new();
    let lines = |n: u32| {
        format!(
            "for i in range(1, {}):\n    print(f'epoch {{i}}', flush=True)\n",
            n + 1
        )
    };
    let py = crate::common::python();
    let py = py.to_str().expect("utf-8");
    let killed_script = lines(1_000_000);
    let steady_script = lines(3000);
    let killed = home
        .cmd(&["run", "--interval-ms", "20", "--", py, "-c", &killed_script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("first writer");
    let steady = home
        .cmd(&[
            "run",
            "--interval-ms",
            "20",
            "--json",
            "--",
            py,
            "-c",
            &steady_script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("second writer");
    // Once both are writing (each has epochs in the ledger), kill the first mid-stream.
    let started = Instant::now();
    loop {
        let v = ledger_rows(&home);
        let writing = v["epochs"].as_object().map_or(0, |m| m.len());
        if writing == 2 {
            // Both mid-stream: let them contend a little longer.
            std::thread::sleep(Duration::from_millis(300));
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "both never wrote: {v}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: plain kill(2) on our child's pid.
    assert_eq!(unsafe { libc::kill(killed.id() as i32, libc::SIGKILL) }, 0);
    let killed_out = killed.wait_with_output().expect("first writer");
    let steady_out = steady.wait_with_output().expect("second writer");
    for err in [&killed_out.stderr, &steady_out.stderr] {
        let err = String::from_utf8_lossy(err);
        assert!(!err.contains("locked") && !err.contains("busy"), "{err}");
    }
    assert!(
        steady_out.status.success(),
        "{}",
        String::from_utf8_lossy(&steady_out.stderr)
    );
    let v = ledger_rows(&home);
    assert_eq!(v["check"], "ok", "{v}");
    let epochs = v["epochs"].as_object().expect("epochs by run");
    let counts: Vec<(String, Vec<u64>)> = epochs
        .iter()
        .map(|(k, e)| {
            (
                k.clone(),
                e.as_array()
                    .expect("list")
                    .iter()
                    .filter_map(serde_json::Value::as_u64)
                    .collect(),
            )
        })
        .collect();
    assert_eq!(counts.len(), 2, "{v}");
    for (_, e) in &counts {
        let want: Vec<u64> = (1..=e.len() as u64).collect();
        assert_eq!(e, &want, "epochs 1..k without a gap");
    }
    // Told apart by the steady run's id (either may have written more by the kill).
    let steady: serde_json::Value =
        serde_json::from_slice(&steady_out.stdout).expect("the steady run's JSON");
    let steady_id = steady["run_id"].as_i64().expect("run id").to_string();
    let (killed_id, killed_rows) = counts
        .iter()
        .find(|(k, _)| *k != steady_id)
        .expect("the killed run's rows");
    let (_, steady_rows) = counts
        .iter()
        .find(|(k, _)| *k == steady_id)
        .expect("the steady run's rows");
    assert_eq!(steady_rows.len(), 3000);
    assert!(
        !killed_rows.is_empty(),
        "the killed writer wrote {} rows",
        killed_rows.len()
    );
    // Its run is closed as interrupted the next time the ledger is opened.
    let runs = home.runs();
    let killed_run = runs
        .iter()
        .find(|r| r["id"].as_i64().map(|i| i.to_string()).as_deref() == Some(killed_id.as_str()))
        .expect("killed run");
    assert_eq!(killed_run["status"], "interrupted", "{killed_run}");
}

/// Every process below `pid`, children first.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for c in children_of(p) {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

/// Whether process `pid` is a `headroom worker`.
/// `headroom worker` (before it hands over) or the `headroom-worker` it becomes.
fn is_worker(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            c.split(|b| *b == 0)
                .any(|a| a == b"worker" || a.ends_with(b"/headroom-worker"))
        })
        .unwrap_or(false)
}

#[test]
fn a_hundred_workers_killed_at_random_moments_lose_no_recorded_point() {
    // 100 trials: sweeps, epochs runs and remote sweeps (over a real sshd), each worker killed
    // with SIGKILL at a random moment (a fixed seed, so a failure can be replayed). Every time
    // the parent survives and says how the run ended, every point or epoch it reported is in
    // the ledger, and the next trial starts cleanly on the same ledger.
    let sshd = crate::sshd::Sshd::start();
    let home = Home::new();
    let ssh = home.path().join("ssh");
    crate::remote::add(&home, &ssh, "box", sshd.port, &sshd.userkey());
    let sweep = [
        "--device",
        "cpu",
        "--workload",
        "mlp",
        "--batches",
        "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16",
        "--steps",
        "40",
        "--threads",
        "1",
        "--json",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let (mut killed, mut finished_first, mut rows, mut before_hello) = (0, 0, 0, 0);
    let started = Instant::now();
    for trial in 0..100 {
        let kind = ["sweep", "sweep", "epochs", "sweep", "remote"][trial % 5];
        let args: Vec<&str> = match kind {
            "sweep" => [&["sweep"][..], &sweep].concat(),
            "remote" => [&["remote", "sweep", "box"][..], &sweep].concat(),
            _ => vec![
                "epochs",
                "--device",
                "cpu",
                "--workload",
                "mlp",
                "--batch",
                "16",
                "--epochs",
                "30",
                "--steps-per-epoch",
                "20",
                "--threads",
                "1",
                "--json",
            ],
        };
        let parent = home
            .cmd(&args)
            .env("HEADROOM_SSH_DIR", &ssh)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start");
        let delay = Duration::from_millis(300 + next() % 2200);
        let t0 = Instant::now();
        let mut done = false;
        while t0.elapsed() < delay + Duration::from_secs(20) {
            let workers: Vec<u32> = if kind == "remote" {
                sshd.pid().map(descendants).unwrap_or_default()
            } else {
                descendants(parent.id())
            }
            .into_iter()
            .filter(|p| is_worker(*p))
            .collect();
            if t0.elapsed() >= delay && !workers.is_empty() {
                for w in workers {
                    // SAFETY: kill(2) on a worker of this trial.
                    unsafe { libc::kill(w as i32, libc::SIGKILL) };
                }
                killed += 1;
                done = true;
                break;
            }
            if !std::path::Path::new(&format!("/proc/{}", parent.id())).exists()
                || std::fs::read_to_string(format!("/proc/{}/stat", parent.id()))
                    .is_ok_and(|s| s.contains(") Z "))
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = parent.wait_with_output().expect("the parent ends");
        if !done {
            finished_first += 1;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("trial {trial} ({kind}): no JSON ({e}); stderr: {err}"));
        let status = v["status"].as_str().unwrap_or("");
        assert!(
            ["complete", "interrupted"].contains(&status)
                || (status == "error" && v["run_id"].is_null()),
            "trial {trial} ({kind}): {status}: {err}"
        );
        let Some(id) = v["run_id"].as_i64() else {
            before_hello += 1;
            continue;
        };
        let (_, shown) = home.json(&["ledger", "show", &id.to_string(), "--json"]);
        assert_eq!(shown["run"]["status"], status, "trial {trial} ({kind})");
        let (reported, recorded) = if kind == "epochs" {
            (
                v["samples"].as_array().map(Vec::len),
                shown["samples"].as_array().map(Vec::len),
            )
        } else {
            (
                v["points"].as_array().map(Vec::len),
                shown["points"].as_array().map(Vec::len),
            )
        };
        assert_eq!(
            reported, recorded,
            "trial {trial} ({kind}): reported vs in the ledger"
        );
        rows += recorded.unwrap_or(0);
    }
    assert!(
        killed >= 60,
        "only {killed} kills landed ({finished_first} finished first)"
    );
    eprintln!(
        "{killed} workers killed ({before_hello} before their hello), {finished_first} trials \
         finished first, {rows} points/epochs kept, in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// `headroom run --json -- python -c SCRIPT PIDFILE ARGS...`, once the script has written its
/// pid to PIDFILE (its first argument): the run and the command's pid.
fn run_until_started(home: &Home, script: &str, args: &[&str]) -> (Child, i32) {
    let py = crate::common::python();
    let pidfile = home.path().join("pid");
    let mut argv = vec![
        "run",
        "--json",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        script,
        pidfile.to_str().expect("utf-8"),
    ];
    argv.extend_from_slice(args);
    let child = home
        .cmd(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start headroom run");
    let started = Instant::now();
    let pid = loop {
        if let Some(p) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break p;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (child, pid)
}

/// Ctrl-C or SIGTERM sent to `headroom run` (not to the terminal's group) reaches the command
/// too: nothing is left running unmonitored, and the run is closed as interrupted.
#[test]
fn a_signal_to_headroom_run_reaches_the_command_and_closes_the_run() {
    let script = "import os, sys, time\nopen(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\nos.rename(sys.argv[1] + '.tmp', sys.argv[1])\nfor i in range(600):\n    print('tick', i, flush=True)\n    time.sleep(0.1)\n";
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let home = Home::new();
        let (child, pid) = run_until_started(&home, script, &[]);
        // SAFETY: plain kill(2) on the child we started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let out = child.wait_with_output().expect("wait for headroom run");
        let until = Instant::now() + Duration::from_secs(10);
        // SAFETY: kill(2) with signal 0 only asks whether the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 {
            assert!(
                Instant::now() < until,
                "signal {sig}: the command {pid} still runs"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(v["interrupted"], true, "signal {sig}: {v}");
        assert!(!out.status.success(), "signal {sig}: {:?}", out.status);
        assert_eq!(home.runs()[0]["status"], "interrupted", "signal {sig}");
    }
}

/// A command that catches SIGTERM (to save a checkpoint, as Lightning does) has its grace, and
/// one that then keeps running is killed after it: Stop always stops, and the run is kept as
/// interrupted.
#[test]
fn a_command_that_ignores_the_stop_is_killed_after_its_grace() {
    let home = Home::new();
    let saved = home.path().join("checkpoint");
    let script = "import os, signal, sys, time\ndef save(*_):\n    open(sys.argv[2], 'w').write('saved')\nsignal.signal(signal.SIGTERM, save)\nopen(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\nos.rename(sys.argv[1] + '.tmp', sys.argv[1])\nwhile True:\n    time.sleep(0.1)\n";
    let (child, pid) = run_until_started(&home, script, &[saved.to_str().expect("utf-8")]);
    let asked = Instant::now();
    // SAFETY: plain kill(2) on the child we started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().expect("wait for headroom run");
    let took = asked.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read_to_string(&saved).ok().as_deref(),
        Some("saved"),
        "the command's handler ran: {err}"
    );
    assert!(
        err.contains("did not stop within 10 s of being asked to; killing it"),
        "{err}"
    );
    // Killed after the grace, not before it.
    assert!(
        took >= Duration::from_secs(10),
        "ended after {took:?}: {err}"
    );
    // SAFETY: kill(2) with signal 0 only asks whether the process exists.
    assert_ne!(
        unsafe { libc::kill(pid, 0) },
        0,
        "the command {pid} still runs"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(v["interrupted"], true, "{v}");
    assert_eq!(home.runs()[0]["status"], "interrupted");
}

/// A command killed by a signal (the OOM killer's SIGKILL) is reported with the signal, and
/// `headroom run` exits 128 + N as a shell does.
#[test]
fn a_command_killed_by_a_signal_is_named_and_exits_128_plus_n() {
    let home = Home::new();
    let py = crate::common::python();
    let out = home.run(&[
        "run",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    ]);
    assert_eq!(out.status.code(), Some(128 + 9), "{:?}", out.status);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("killed by signal 9 (SIGKILL"), "{err}");
    assert_eq!(home.runs()[0]["status"], "failed");
}

/// 200 MB written without a newline passes through without Headroom keeping it: what is kept
/// for reading is cut at 64 KiB a line (400 MB used to take Headroom to 791 MB).
#[test]
fn a_huge_line_without_newline_passes_through_in_bounded_memory() {
    let home = Home::new();
    let py = crate::common::python();
    let mut child = home
        .cmd(&[
            "run",
            "--",
            py.to_str().expect("utf-8"),
            "-c",
            "import sys, time\nchunk = 'x' * (1 << 20)\nfor _ in range(200):\n    sys.stdout.write(chunk)\nsys.stdout.flush()\ntime.sleep(0.5)\n",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run");
    // Headroom's own peak resident set (VmHWM), read while it runs.
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(kib) = std::fs::read_to_string(&status_file).ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        }) {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
    assert!(peak_kib > 0, "no reading of headroom's memory");
    assert!(
        peak_kib < 100 * 1024,
        "headroom peaked at {} MiB passing 200 MB of output through",
        peak_kib / 1024
    );
}

/// `headroom run` killed with SIGKILL while its command trains: the next command closes the run
/// as interrupted and says the command may have run on (not "failed"), and the next `run`
/// removes the dead one's channel folder (`headroom-run-PID-N`) from the temp folder.
#[test]
fn a_headroom_run_killed_with_sigkill_leaves_no_folder_and_a_run_that_says_what_is_known() {
    let home = Home::new();
    let tmp = home.path().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    let py = crate::common::python();
    let mut parent = home
        .cmd(&[
            "run",
            "--",
            py.to_str().expect("utf-8"),
            "-c",
            "import time\nfor i in range(600):\n    time.sleep(0.1)\n    print(i, flush=True)",
        ])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("headroom run");
    let t0 = Instant::now();
    let folder = loop {
        let found = std::fs::read_dir(&tmp)
            .expect("tmp")
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("headroom-run-"));
        if let Some(f) = found {
            break f.path();
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no channel folder");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Once the run is recorded, kill headroom only (its command runs on).
    while home.runs().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run was never recorded"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let command = children_of(parent.id());
    parent.kill().expect("SIGKILL headroom");
    parent.wait().expect("reap");
    assert!(folder.exists(), "a killed process removes nothing");
    let out = home
        .cmd(&["run", "--", py.to_str().expect("utf-8"), "-c", "pass"])
        .env("TMPDIR", &tmp)
        .output()
        .expect("the next run");
    assert!(out.status.success(), "{out:?}");
    assert!(!folder.exists(), "{} was left behind", folder.display());
    let runs = home.runs();
    let killed = runs.last().expect("the killed run");
    assert_eq!(killed["status"], "interrupted", "{killed}");
    assert!(
        killed["note"]
            .as_str()
            .unwrap_or("")
            .contains("may have run on unwatched"),
        "{killed}"
    );
    // The command Headroom left running unwatched.
    for pid in command {
        // SAFETY: plain kill(2) on a pid read from /proc as the test's grandchild.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}
