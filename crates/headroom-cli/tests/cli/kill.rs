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

/// Starts a slow CPU sweep over `batches` (its output captured or discarded) and returns once
/// `n` of its points are in the ledger.
fn sweep_until_points(home: &Home, batches: &str, n: u64, capture: bool) -> Child {
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
#[cfg(target_os = "linux")]
fn a_worker_killed_mid_sweep_leaves_its_points_in_the_ledger() {
    let home = Home::new();
    let parent = sweep_until_points(&home, "1,2,3,4,5,6,7,8,9,10,11,12", 2, true);
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

#[test]
#[cfg(target_os = "linux")]
fn a_run_whose_headroom_process_was_killed_is_closed_as_interrupted() {
    let home = Home::new();
    let mut parent = sweep_until_points(&home, "1,2,3,4,5,6,7,8", 1, false);
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
#[cfg(target_os = "linux")]
fn a_worker_that_stops_answering_is_ended_and_its_points_kept() {
    // SIGSTOP freezes the worker whole (its heartbeat thread too): the parent hears nothing
    // for the silence limit (3 s here, 60 s by default), ends it, and keeps what it measured.
    let home = Home::new();
    let args = [
        "sweep",
        "--device",
        "cpu",
        "--workload",
        "mlp",
        "--batches",
        "1,2,3,4,5,6,7,8,9,10,11,12",
        "--steps",
        "150",
        "--json",
    ];
    let parent = home
        .cmd(&args)
        .env("HEADROOM_WORKER_SILENCE_S", "3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sweep");
    let started = Instant::now();
    while home
        .runs()
        .first()
        .and_then(|r| r["points"].as_u64())
        .unwrap_or(0)
        < 1
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no point after two minutes"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
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
    // it alive (cnn at batch 256 on one thread: about 4 s a step here, against 3 s).
    let out = home
        .cmd(&[
            "sweep",
            "--device",
            "cpu",
            "--workload",
            "cnn",
            "--batches",
            "256",
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
