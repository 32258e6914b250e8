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
