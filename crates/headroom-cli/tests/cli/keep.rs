//! Issue 39: the wrapper outlives its ledger. Another process holds the real SQLite ledger's
//! write lock (`BEGIN EXCLUSIVE`, as a second tool or a backup would) while a real script
//! trains under `headroom run`, or while `headroom sweep` measures: the command runs to its
//! end, exits with its own status, and every record reaches the ledger — late, or through a
//! spill file that the next command replays.

use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use crate::common::{python, Home};

/// Holds the ledger's write lock once `start` exists (and, with `--after-run`, once the ledger
/// has a run), until `release` exists; says `locked` on stdout.
const LOCKER: &str = r#"
import os, sqlite3, sys, time
ledger, start, release = sys.argv[1:4]
after_run = "--after-run" in sys.argv
while not os.path.exists(start):
    time.sleep(0.02)
c = sqlite3.connect(ledger, isolation_level=None, timeout=60)
while after_run and c.execute("SELECT count(*) FROM runs").fetchone()[0] == 0:
    time.sleep(0.02)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
while not os.path.exists(release):
    time.sleep(0.02)
c.execute("COMMIT")
"#;

/// Trains for `epochs` epochs of `seconds` each, printing each; touches `marks/epochN` as
/// epoch N starts; exits with `code`.
const TRAIN: &str = r#"
import os, sys, time
epochs, seconds, code = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
os.makedirs("marks", exist_ok=True)
for e in range(1, epochs + 1):
    open(f"marks/epoch{e}", "w").close()
    time.sleep(seconds)
    print(f"epoch {e} loss {1.0 / e:.4f}", flush=True)
sys.exit(code)
"#;

fn setup(home: &Home) {
    std::fs::write(home.path().join("locker.py"), LOCKER).expect("locker");
    std::fs::write(home.path().join("train.py"), TRAIN).expect("train");
    // The ledger exists before the lock is taken.
    assert!(home.run(&["ledger", "list"]).status.success());
}

fn locker(home: &Home, start: &str, release: &str, after_run: bool) -> Child {
    let mut c = Command::new(python());
    c.arg("locker.py")
        .arg(home.path().join("ledger.sqlite3"))
        .arg(start)
        .arg(release)
        .current_dir(home.path())
        .stdout(Stdio::piped());
    if after_run {
        c.arg("--after-run");
    }
    c.spawn().expect("start the locker")
}

/// Waits until the locker says it holds the lock.
fn locked(child: &mut Child) {
    use std::io::BufRead;
    let out = child.stdout.take().expect("locker stdout");
    let mut line = String::new();
    std::io::BufReader::new(out)
        .read_line(&mut line)
        .expect("read the locker");
    assert_eq!(line.trim(), "locked");
}

fn spills(home: &Home) -> Vec<String> {
    std::fs::read_dir(home.path())
        .expect("home")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".spill-"))
        .collect()
}

fn show(home: &Home, id: i64) -> Value {
    let (out, v) = home.json(&["ledger", "show", &id.to_string(), "--json"]);
    assert!(out.status.success(), "{out:?}");
    v
}

/// The epoch rows `ledger show RUN` prints for run `id`.
fn epochs_of(home: &Home, id: i64) -> usize {
    let out = home.run(&["ledger", "show", &id.to_string()]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("epoch "))
        .count()
}

/// The ledger is locked from epoch 3 for longer than Headroom ever waits for a lock (12 s):
/// the training goes on to its last epoch and its own exit status, and once the lock is gone
/// every epoch is in the ledger.
#[test]
fn a_ledger_locked_for_twelve_seconds_mid_run_never_ends_the_training() {
    let home = Home::new();
    setup(&home);
    let mut lock = locker(&home, "marks/epoch3", "marks/epoch28", false);
    let py = python();
    let out = home
        .cmd(&[
            "run",
            "--json",
            "--no-instrument",
            "--interval-ms",
            "200",
            "--",
            py.to_str().expect("utf-8"),
            "train.py",
            "30",
            "0.45",
            "7",
        ])
        .output()
        .expect("headroom run");
    let _ = lock.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "the script's own status: {err}");
    assert!(
        err.contains("epoch 30 loss"),
        "the training ended early: {err}"
    );
    assert!(err.contains("database is locked"), "{err}");
    assert!(err.contains("written"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["epochs"].as_array().map(Vec::len), Some(30), "{v}");
    let id = v["run_id"].as_i64().expect("run id");
    assert!(id > 0, "begun before the lock: {v}");
    let run = show(&home, id);
    assert_eq!(run["run"]["status"], "failed", "exit 7: {run}");
    assert!(spills(&home).is_empty(), "{:?}", spills(&home));
    // Every epoch and reading written late, in the ledger now.
    assert_eq!(epochs_of(&home, id), 30);
}

/// Locked before `headroom run` starts and until after it ended: the command runs anyway (the
/// ledger cannot even be opened), its records go to a spill file, and the next command that
/// opens the ledger writes them in (the run's provisional id becomes a real one).
#[test]
fn a_ledger_locked_from_start_to_end_spills_and_the_next_command_writes_the_run() {
    let home = Home::new();
    setup(&home);
    std::fs::write(home.path().join("go"), "").expect("go");
    let mut lock = locker(&home, "go", "release", false);
    locked(&mut lock);
    let py = python();
    let t0 = Instant::now();
    let out = home
        .cmd(&[
            "run",
            "--no-instrument",
            "--",
            py.to_str().expect("utf-8"),
            "train.py",
            "4",
            "0.2",
            "0",
        ])
        .output()
        .expect("headroom run");
    let took = t0.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("epoch 4 loss"),
        "{out:?}"
    );
    assert!(err.contains("the command runs anyway"), "{err}");
    assert!(err.contains("spill"), "{err}");
    // The open waited a moment, the end a few seconds: not the old 10 s per write.
    assert!(took < 20.0, "took {took:.1} s: {err}");
    let left = spills(&home);
    assert_eq!(left.len(), 1, "{left:?}");
    std::fs::write(home.path().join("release"), "").expect("release");
    let _ = lock.wait();
    let runs = home.runs();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["status"], "complete", "{}", runs[0]);
    assert!(spills(&home).is_empty(), "replayed: {:?}", spills(&home));
    let id = runs[0]["id"].as_i64().expect("id");
    assert_eq!(epochs_of(&home, id), 4);
}

/// A sweep whose ledger is locked once its run is recorded: every point is measured and shown,
/// the sweep exits 0, and the points reach the ledger when the lock is gone.
#[test]
fn a_sweep_whose_ledger_is_locked_keeps_every_point() {
    let home = Home::new();
    setup(&home);
    std::fs::write(home.path().join("go"), "").expect("go");
    let mut lock = locker(&home, "go", "release", true);
    let (out, v) = home.json(&[
        "sweep",
        "--device",
        "cpu",
        "--batches",
        "1,2,4",
        "--steps",
        "20",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    locked(&mut lock);
    // The lock came while the sweep measured (taken as soon as its run was recorded).
    assert!(err.contains("database is locked"), "{err}");
    assert_eq!(crate::common::points(&v).len(), 3, "{v}");
    std::fs::write(home.path().join("release"), "").expect("release");
    let _ = lock.wait();
    let runs = home.runs();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["status"], "complete", "{}", runs[0]);
    assert_eq!(runs[0]["points"], 3, "{}", runs[0]);
}
