//! Bad input: a one-line error that says what to do, a non-zero exit, no panic, nothing in the
//! ledger.

use crate::common::Home;

/// Runs `args`, expects failure with a message containing `expect`, and an empty ledger.
fn refused(args: &[&str], expect: &str) {
    let home = Home::new();
    let out = home.run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "{args:?} should fail; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(expect),
        "{args:?}: stderr should mention {expect:?}: {err}"
    );
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    let error_lines: Vec<&str> = err
        .lines()
        // Headroom's own, or clap's for a value out of a flag's range.
        .filter(|l| l.starts_with("headroom: error") || l.starts_with("error: "))
        .collect();
    assert_eq!(
        error_lines.len(),
        1,
        "{args:?}: one error line expected: {err}"
    );
    assert!(home.runs().is_empty(), "{args:?} wrote a run to the ledger");
}

#[test]
fn unknown_workload() {
    refused(
        &[
            "sweep",
            "--device",
            "cpu",
            "--workload",
            "resnet9000",
            "--batches",
            "1",
        ],
        "unknown workload \"resnet9000\": use one of mlp",
    );
}

#[test]
fn missing_model_file() {
    refused(
        &[
            "sweep",
            "--device",
            "cpu",
            "--workload",
            "/nonexistent/model.pt",
            "--input-shape",
            "4",
            "--batches",
            "1",
        ],
        "cannot read model file",
    );
}

#[test]
fn a_file_that_is_not_torchscript() {
    let home = Home::new();
    let bad = home.path().join("notes.pt");
    std::fs::write(
        &bad,
        b"definitely not a zip archive of a TorchScript module",
    )
    .expect("write");
    let p = bad.to_string_lossy().into_owned();
    refused(
        &[
            "sweep",
            "--device",
            "cpu",
            "--workload",
            &p,
            "--input-shape",
            "4",
            "--batches",
            "1",
        ],
        "is not a TorchScript module",
    );
}

#[test]
fn a_shape_that_does_not_fit_the_model() {
    refused(
        &[
            "sweep",
            "--device",
            "cpu",
            "--workload",
            "vit-tiny",
            "--input-shape",
            "3x100x100",
            "--batches",
            "1",
        ],
        "divisible by its patch size",
    );
    refused(
        &[
            "sweep",
            "--device",
            "cpu",
            "--workload",
            "cnn",
            "--input-shape",
            "3x0x32",
        ],
        "not a list of positive sizes",
    );
}

#[test]
fn a_zero_budget() {
    refused(&["sweep", "--device", "cpu", "--budget", "0"], "is zero");
    refused(
        &["sweep", "--device", "cpu", "--budget", "lots"],
        "write e.g. 12GiB",
    );
}

#[test]
fn a_device_that_is_not_there() {
    refused(
        &["sweep", "--device", "cuda:7", "--batches", "1"],
        "device cuda:7 is not there",
    );
    refused(
        &["sweep", "--device", "tpu", "--batches", "1"],
        "is not one of auto, cpu, mps, cuda",
    );
}

#[test]
fn zero_batches() {
    refused(
        &["sweep", "--device", "cpu", "--batches", "0,2"],
        "a batch of 0 cannot run",
    );
    refused(
        &["sweep", "--device", "cpu", "--max-batch", "0"],
        "--max-batch 0",
    );
}

#[test]
fn a_compare_that_cannot_compare() {
    refused(
        &[
            "sweep",
            "--device",
            "cpu",
            "--batches",
            "1",
            "--compare",
            "cpu",
        ],
        "--compare cpu needs another device",
    );
    refused(
        &[
            "sweep",
            "--device",
            "auto",
            "--batches",
            "1",
            "--compare",
            "mps",
        ],
        "the baseline is `cpu` or `mlx`",
    );
    refused(
        &[
            "sweep",
            "--workload",
            "copy",
            "--batches",
            "1",
            "--compare",
            "mlx",
        ],
        "which Headroom has for mlp, matmul, cnn, vit-tiny, gpt-tiny only",
    );
    refused(
        &[
            "sweep",
            "--workload",
            "cnn",
            "--input-shape",
            "3x64x64",
            "--batches",
            "1",
            "--compare",
            "mlx",
        ],
        "--compare mlx compares the default input shape in f32",
    );
}

#[test]
fn a_missing_run() {
    let home = Home::new();
    let out = home.run(&["ledger", "show", "42"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run 42 in the ledger"));
}

#[test]
fn a_corrupt_ledger_is_named_with_what_to_do_and_left_as_it_was() {
    let home = Home::new();
    let ledger = home.path().join("ledger.sqlite3");
    let garbage =
        b"not a database: a file that was half-copied, or something else entirely\n".repeat(40);
    std::fs::write(&ledger, &garbage).expect("garbage ledger");
    for args in [
        &["ledger", "list"][..],
        &["sweep", "--device", "cpu", "--batches", "1", "--steps", "3"][..],
    ] {
        let out = home.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(ledger.to_str().expect("utf-8")) && err.contains("move it aside"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        std::fs::read(&ledger).expect("still there"),
        garbage,
        "nothing overwritten"
    );
    // Moved aside, the next run starts a new ledger.
    std::fs::rename(&ledger, home.path().join("ledger.broken")).expect("move aside");
    let out = home.run(&["ledger", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn version_names_the_commit_and_the_libtorch() {
    let home = Home::new();
    let out = home.run(&["--version"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    assert!(
        text.starts_with(&format!(
            "headroom {} (commit {head}",
            env!("CARGO_PKG_VERSION")
        )),
        "{text}"
    );
    assert!(text.contains(", libtorch 2.11.0)"), "{text}");
}

/// `headroom` copied somewhere without `headroom-worker` beside it (a half-done install): a sweep
/// says which file is missing and what to do, `--version` says the libtorch is unknown and why,
/// and nothing is recorded.
#[test]
fn a_missing_worker_binary_is_named() {
    let home = Home::new();
    let bin = tempfile::tempdir().expect("temp dir");
    let lone = bin.path().join("headroom");
    std::fs::copy(env!("CARGO_BIN_EXE_headroom"), &lone).expect("copy headroom");
    let out = std::process::Command::new(&lone)
        .args([
            "sweep",
            "--device",
            "cpu",
            "--workload",
            "mlp",
            "--batches",
            "1",
        ])
        .env("HEADROOM_HOME", home.path())
        .output()
        .expect("run headroom");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("headroom-worker is missing from")
            && err.contains("reinstall Headroom, or build both"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        home.runs().is_empty(),
        "a run was recorded without a worker"
    );

    let v = std::process::Command::new(&lone)
        .arg("--version")
        .output()
        .expect("run headroom --version");
    let line = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success(), "{line}");
    assert!(
        line.starts_with("headroom ")
            && line.contains("libtorch unknown: headroom-worker is missing"),
        "{line}"
    );

    // Beside its worker (the build's), the same copy answers.
    let real = std::process::Command::new(env!("CARGO_BIN_EXE_headroom"))
        .arg("--version")
        .output()
        .expect("run headroom --version");
    let line = String::from_utf8_lossy(&real.stdout);
    assert!(line.contains("libtorch 2."), "{line}");
}

#[test]
fn more_threads_than_cores_is_refused_at_once() {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    refused(
        &[
            "sweep",
            "--device",
            "cpu",
            "--workload",
            "mlp",
            "--batches",
            "1",
            "--threads",
            "100000",
        ],
        &format!(
            "--threads 100000 cannot run here: this machine has {cores} core(s); give 1 to {cores}"
        ),
    );
}

/// Issue 39: with stdout closed before they write (`| head -1` that has already read its line),
/// commands end quietly with 141 (128 + SIGPIPE) as Unix tools do: no panic, no backtrace.
#[test]
#[cfg(unix)]
fn a_closed_stdout_ends_each_command_quietly() {
    use std::process::Stdio;
    let home = crate::common::Home::new();
    let commands: &[&[&str]] = &[
        &["--version"],
        &["ledger", "list"],
        &["ledger", "list", "--json"],
        &["decide"],
        &["contention"],
        &["project", "list"],
        &["remote", "list"],
        &["config", "show"],
        &["run", "--json", "--", "true"],
    ];
    for args in commands {
        // A pipe whose read end is closed before the command starts: every write to its
        // stdout fails with EPIPE.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = home
            .cmd(args)
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .output()
            .expect("headroom");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        // 141 where it wrote to stdout; a command with nothing for stdout (no projects yet, said
        // on stderr) ends as it would have.
        let prints = matches!(args[0], "--version" | "ledger" | "config" | "decide");
        let want: &[i32] = if prints { &[141] } else { &[0, 141] };
        assert!(
            out.status.code().is_some_and(|c| want.contains(&c)),
            "{args:?} ended {:?}: {err}",
            out.status
        );
    }
}

/// Issue 39: bad sweep values and batches are refused before anything runs, each with a
/// message that names the value and nothing recorded.
#[test]
fn bad_sweep_values_batches_and_devices_are_refused_before_anything_runs() {
    let home = crate::common::Home::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--sweep", "batch=a,b", "--", "echo", "{batch}"],
            "\"a\" is not a whole number",
        ),
        (
            &["run", "--sweep", "batch=0", "--", "echo", "{batch}"],
            "\"0\" is not a whole number",
        ),
        (
            &["run", "--sweep", "batch=-1", "--", "echo", "{batch}"],
            "\"-1\" is not a whole number",
        ),
        (
            &[
                "run",
                "--sweep",
                "batch=99999999999",
                "--",
                "echo",
                "{batch}",
            ],
            "from 1 to",
        ),
        (
            &["run", "--sweep", "batch=auto,4", "--", "echo", "{batch}"],
            "stands alone",
        ),
        (
            &[
                "run", "--sweep", "batch=1", "--sweep", "batch=2", "--", "echo", "{batch}",
            ],
            "given twice",
        ),
        (
            &[
                "run",
                "--sweep",
                "batch=auto",
                "--device-sweep",
                "cpu,bogus",
                "--",
                "echo",
                "{batch}",
                "{device}",
            ],
            "not a device",
        ),
        (&["run", "--batch", "0", "--", "echo", "hi"], "--batch 0"),
    ];
    for (args, want) in cases {
        let out = home.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(home.runs().is_empty(), "nothing ran");
}

/// Issue 39's probe, the cases that were swallowed, raw or misleading: each now a clear
/// one-line error naming what to change, before anything runs.
#[test]
fn the_probe_cases_say_what_is_wrong_and_what_to_do() {
    // A batch too large to be a number is too large, not "not a positive whole number".
    refused(
        &["sweep", "--device", "cpu", "--batches", "1000000000000"],
        "too large",
    );
    // Out-of-range counts and timeouts are refused, not clamped or handed to ssh.
    refused(&["remote", "rtt", "127.0.0.1", "--count", "0"], "--count");
    refused(
        &["remote", "rtt", "127.0.0.1", "--count", "100000"],
        "--count",
    );
    refused(
        &["remote", "check", "box", "--timeout", "99999999999"],
        "--timeout",
    );
    // A project run by a program that is no Python, or in a file instead of a folder.
    refused(
        &[
            "project", "add", "p", "--dir", "/tmp", "--python", "/bin/ls", "--", "python",
            "train.py",
        ],
        "is not a Python interpreter",
    );
    refused(
        &[
            "project",
            "add",
            "p",
            "--dir",
            "/etc/passwd",
            "--",
            "python",
            "train.py",
        ],
        "is a file, not a folder",
    );
    // A name `project add` would refuse is not suggested to it.
    let home = Home::new();
    let out = home.run(&["run", "--project", "a/b"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("project add a/b"), "{err}");
    // --max-batch under the first batch names --start-batch.
    let py = crate::common::python();
    refused(
        &[
            "run",
            "--sweep",
            "batch=auto",
            "--max-batch",
            "8",
            "--",
            py.to_str().expect("utf-8"),
            "-c",
            "pass",
            "{batch}",
        ],
        "--start-batch",
    );
    // A chart that cannot be written is found before the sweep runs.
    refused(
        &[
            "run",
            "--sweep",
            "batch=1,2",
            "--chart",
            "/proc/no/such/chart.svg",
            "--",
            py.to_str().expect("utf-8"),
            "-c",
            "pass",
            "{batch}",
        ],
        "found before the sweep ran",
    );
}

#[test]
fn a_ledger_that_is_a_folder_is_named_as_one() {
    let home = Home::new();
    std::fs::create_dir(home.path().join("ledger.sqlite3")).expect("a folder");
    let out = home.run(&["ledger", "list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is a folder, not a file"), "{err}");
    assert!(!err.contains("permissions"), "{err}");
}

#[test]
fn an_os_error_is_said_once() {
    let home = Home::new();
    // The ledger's folder is a file: every write fails with the same OS error.
    let blocked = home.path().join("blocked");
    std::fs::write(&blocked, "a file").expect("file");
    let out = home
        .cmd(&["sweep", "--device", "cpu", "--batches", "1"])
        .env("HEADROOM_HOME", blocked.join("home"))
        .output()
        .expect("headroom");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
}

/// A shape too large for libtorch, and one too large for memory: the worker's message, said
/// in one line, without libtorch's C++ backtrace or a bare exit code.
#[test]
fn a_worker_failure_says_what_failed_without_a_backtrace() {
    for shape in ["99999999999999", "1x100000x100000"] {
        let home = Home::new();
        let out = home.run(&[
            "sweep",
            "--device",
            "cpu",
            "--batches",
            "1",
            "--input-shape",
            shape,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{shape}: {err}");
        assert!(!err.contains("frame #"), "{shape}: {err}");
        assert!(!err.contains("Exception raised from"), "{shape}: {err}");
        assert!(!err.contains("exit code 101 after"), "{shape}: {err}");
        assert!(err.lines().count() < 12, "{shape}: {err}");
    }
    // A leak demo far larger than memory: libtorch's allocator refuses it, said in one line.
    let home = Home::new();
    let out = home.run(&[
        "epochs",
        "--device",
        "cpu",
        "--leak-demo",
        "999999999",
        "--epochs",
        "2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("can't allocate memory"), "{err}");
    assert!(!err.contains("frame #"), "{err}");
    assert!(!err.contains("Exception raised from"), "{err}");
}

#[test]
fn epochs_on_a_device_that_is_not_there_give_no_verdict() {
    let home = Home::new();
    let out = home.run(&["epochs", "--device", "cuda:99", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_ne!(out.status.code(), Some(0), "{v}");
    assert!(v["verdict"].is_null(), "{v}");
}

/// `headroom run … | head -1`: once nobody reads Headroom's output, the command learns it at its
/// next write as it would without Headroom between (Python: BrokenPipeError, exit 1), and
/// Headroom exits with that status — not a silent 0 after the command printed on for nothing.
#[test]
#[cfg(unix)]
fn a_closed_stdout_under_headroom_run_reaches_the_command() {
    use std::io::BufRead;
    use std::process::Stdio;
    let home = crate::common::Home::new();
    let py = crate::common::python();
    let mut child = home
        .cmd(&[
            "run",
            "--no-instrument",
            "--",
            py.to_str().expect("utf-8"),
            "-c",
            "import time\nfor i in range(600):\n    print(i, flush=True)\n    time.sleep(0.01)",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("headroom run");
    let t0 = std::time::Instant::now();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the first line");
    // The reader (and so the pipe's read end) is dropped here, as `head -1` exits.
    assert_eq!(first.trim(), "0");
    let out = child.wait_with_output().expect("wait");
    let took = t0.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(0), "a silent 0: {err}");
    assert!(
        err.contains("BrokenPipeError"),
        "the command was told: {err}"
    );
    // It ended at its next write, not after its six seconds of printing.
    assert!(took < 4.0, "took {took:.1} s: {err}");
}
