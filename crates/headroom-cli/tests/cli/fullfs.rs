//! A full disk and a read-only data folder, for real: Headroom's folder on a small tmpfs that is
//! filled up, then remounted read-only. Needs mount(2) (root, or CAP_SYS_ADMIN); without it the
//! tests say so and pass, unless HEADROOM_REQUIRE_MOUNT=1 (set by .ci/run) makes that a failure.

use std::path::Path;

use crate::common::Home;
use crate::tmpfs::Tmpfs;

fn run(home: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Home::new().cmd(args);
    c.env("HEADROOM_HOME", home)
        .current_dir(home.parent().unwrap_or(home));
    c.output().expect("run headroom")
}

fn runs_in(home: &Path) -> usize {
    let out = run(home, &["ledger", "list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    v.as_array().map_or(0, Vec::len)
}

const SWEEP: [&str; 7] = [
    "sweep",
    "--device",
    "cpu",
    "--batches",
    "1,2",
    "--steps",
    "2",
];

#[test]
fn a_full_disk_is_named_with_what_to_do_and_loses_no_recorded_run() {
    let Some(fs) = Tmpfs::mount("size=2m") else {
        return;
    };
    let home = fs.at.join("home");
    let out = run(&home, &SWEEP);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runs_in(&home), 1);
    // Fill what is left.
    let filler = fs.at.join("filler");
    let chunk = vec![7_u8; 64 * 1024];
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).expect("filler");
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }
    let mut last = String::new();
    for _ in 0..3 {
        let out = run(&home, &SWEEP);
        last = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "a sweep on a full disk succeeded");
        assert!(
            last.contains("disk is full") && last.contains("free some space"),
            "no advice: {last}"
        );
        assert!(!last.contains("panicked"), "{last}");
    }
    // Space freed: the earlier run is still there and the ledger works again.
    std::fs::remove_file(&filler).expect("free");
    assert!(runs_in(&home) >= 1, "the recorded run was lost ({last})");
    let out = run(&home, &SWEEP);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_read_only_folder_is_named_with_what_to_do_and_left_as_it_was() {
    let Some(fs) = Tmpfs::mount("size=64m") else {
        return;
    };
    let home = fs.at.join("home");
    let out = run(&home, &SWEEP);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ledger = home.join("ledger.sqlite3");
    let before = std::fs::read(&ledger).expect("ledger");
    fs.remount("ro");
    for args in [&SWEEP[..], &["ledger", "list"][..]] {
        let out = run(&home, args);
        let err = String::from_utf8_lossy(&out.stderr);
        if args[0] == "ledger" && out.status.success() {
            // Reading a ledger on a read-only disk is fine when SQLite can; writing is not.
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("HEADROOM_HOME") && !err.contains("panicked"),
            "{args:?}: no advice: {err}"
        );
    }
    fs.remount("rw");
    assert_eq!(
        std::fs::read(&ledger).expect("ledger"),
        before,
        "the ledger changed"
    );
    assert_eq!(runs_in(&home), 1);
}

/// Issue 39: a disk that fills up under `headroom run` is Headroom's problem, not the
/// training's: the script runs to its last epoch and exits with its own status, and Headroom
/// says on stderr what it could not record and why.
#[test]
fn a_full_disk_under_headroom_run_never_ends_the_training() {
    let Some(fs) = Tmpfs::mount("size=2m") else {
        return;
    };
    let home = fs.at.join("home");
    assert!(run(&home, &["ledger", "list"]).status.success());
    let filler = fs.at.join("filler");
    {
        use std::io::Write;
        let chunk = vec![7_u8; 64 * 1024];
        let mut f = std::fs::File::create(&filler).expect("filler");
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }
    // The script lives off the full disk; it writes nothing itself.
    let elsewhere = tempfile::tempdir().expect("dir");
    let script = elsewhere.path().join("train.py");
    std::fs::write(
        &script,
        "import time, sys\nfor e in range(1, 21):\n    time.sleep(0.05)\n    \
         print(f'epoch {e} loss {1.0 / e:.4f}', flush=True)\nsys.exit(4)\n",
    )
    .expect("script");
    let py = crate::common::python();
    let out = run(
        &home,
        &[
            "run",
            "--no-instrument",
            "--",
            py.to_str().expect("utf-8"),
            script.to_str().expect("utf-8"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "the script's own status: {err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("epoch 20 loss"),
        "the training ended early: {err}"
    );
    assert!(
        err.contains("disk is full") || err.contains("could not be read or written"),
        "says why: {err}"
    );
    assert!(err.contains("record"), "says what was not recorded: {err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_file(&filler).expect("free");
    assert!(run(&home, &["ledger", "list"]).status.success());
}
