//! The IPC commands validate their arguments as the CLI does. For every command that takes
//! arguments, values that are malformed, out of range or meant as shell or option injection come
//! back as an error whose message is the one `headroom` prints for the same value (both call the
//! same `headroom_core` checks), and nothing is written: no profile, no ssh config, no report.

use std::path::{Path, PathBuf};
use std::process::Command;

use headroom_core::remote::HostProfile;
use headroom_model::epochs::EpochThresholds;
use tauri::async_runtime::block_on;

use crate::commands::{request, SweepForm};
use crate::memory::EpochsForm;

/// The app's check of the epochs form (the core's), its refusal as the UI receives it.
fn epochs_request(
    form: &EpochsForm,
    t: &EpochThresholds,
) -> Result<(headroom_model::protocol::EpochsRequest, EpochThresholds), crate::error::AppError> {
    Ok(headroom_core::jobs::live_memory::epochs_request(form, t)?)
}

/// The app's check of a release (the core's), its refusal as the UI receives it.
fn release_of(r: Option<String>) -> Result<Option<String>, crate::error::AppError> {
    Ok(headroom_core::jobs::live_memory::release_of(r)?)
}

/// The `headroom` binary of this build: the test runs from `<target>/release/deps`.
fn cli() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("headroom"))
        .expect("target dir");
    assert!(
        bin.is_file(),
        "{} is missing: build it first (scripts/bootstrap.sh)",
        bin.display()
    );
    bin
}

/// Runs the CLI with `args` under `home`; returns its exit code and stderr.
fn run_cli(home: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(cli())
        .args(args)
        .env("HEADROOM_HOME", home)
        .env("HEADROOM_SSH_DIR", home.join("ssh"))
        .output()
        .expect("run headroom");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn profile(name: &str) -> HostProfile {
    HostProfile::new(name, "127.0.0.1")
}

/// Both refuse: the app with `code`, the CLI with exit 2 and the app's message in its stderr.
fn same_refusal(
    home: &Path,
    app: Result<impl std::fmt::Debug, crate::error::AppError>,
    code: &str,
    cli_args: &[&str],
) {
    let e = app.expect_err("the app must refuse it");
    assert_eq!(e.code, code, "{e:?}");
    let (exit, stderr) = run_cli(home, cli_args);
    assert_eq!(exit, Some(2), "CLI {cli_args:?}: {stderr}");
    assert!(
        stderr.contains(&e.message),
        "the CLI ({cli_args:?}) and the app say different things:\n  app: {}\n  cli: {stderr}",
        e.message
    );
}

#[test]
fn every_command_with_arguments_refuses_bad_values_as_the_cli_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    // This test's own process (nextest runs each test alone; no other test here reads these).
    std::env::set_var("HEADROOM_HOME", &home);
    std::env::set_var("HEADROOM_SSH_DIR", home.join("ssh"));
    let sentinel = dir.path().join("pwned");
    let s = sentinel.display().to_string();

    // add_host: every field a shell or ssh could interpret.
    let injections: Vec<(&str, HostProfile, Vec<String>)> = vec![
        (
            "host",
            HostProfile {
                host: format!("$(touch {s})"),
                ..profile("box")
            },
            vec!["--host".into(), format!("$(touch {s})")],
        ),
        (
            "host",
            HostProfile {
                host: "-oProxyCommand=sh".into(),
                ..profile("box")
            },
            vec!["--host=-oProxyCommand=sh".into()],
        ),
        (
            "user",
            HostProfile {
                user: Some(format!("`touch {s}`")),
                ..profile("box")
            },
            vec![
                "--host".into(),
                "127.0.0.1".into(),
                "--user".into(),
                format!("`touch {s}`"),
            ],
        ),
        (
            "jump",
            HostProfile {
                jump: Some(format!("-oProxyCommand=touch {s}")),
                ..profile("box")
            },
            vec![
                "--host".into(),
                "127.0.0.1".into(),
                format!("--jump=-oProxyCommand=touch {s}"),
            ],
        ),
        (
            "identity",
            HostProfile {
                identity: Some(format!("/k\nProxyCommand touch {s}")),
                ..profile("box")
            },
            vec![
                "--host".into(),
                "127.0.0.1".into(),
                "--identity".into(),
                format!("/k\nProxyCommand touch {s}"),
            ],
        ),
        (
            "headroom path",
            HostProfile {
                headroom_path: Some(format!("headroom\nProxyCommand touch {s}")),
                ..profile("box")
            },
            vec![
                "--host".into(),
                "127.0.0.1".into(),
                "--headroom-path".into(),
                format!("headroom\nProxyCommand touch {s}"),
            ],
        ),
        (
            "artifact store",
            HostProfile {
                artifact_store: Some("host:99999".into()),
                ..profile("box")
            },
            vec![
                "--host".into(),
                "127.0.0.1".into(),
                "--artifact-store".into(),
                "host:99999".into(),
            ],
        ),
    ];
    for (what, p, flags) in injections {
        let app = block_on(crate::remote::add_host(p, false));
        let mut args = vec!["remote".to_owned(), "add".into(), "box".into()];
        args.extend(flags);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        eprintln!("add_host: {what}");
        same_refusal(&home, app, "invalid_input", &args);
    }
    // "Watch my training"'s release at each epoch end, as `headroom run --release`.
    same_refusal(
        &home,
        release_of(Some("sometimes".into())),
        "invalid_input",
        &["run", "--release", "sometimes", "--", "true"],
    );
    assert_eq!(
        release_of(Some(String::new())).expect("empty is none"),
        None
    );
    let bad_name = format!("box;touch {s}");
    same_refusal(
        &home,
        block_on(crate::remote::add_host(profile(&bad_name), false)),
        "invalid_input",
        &["remote", "add", &bad_name, "--host", "127.0.0.1"],
    );

    // Commands naming a host: an unknown or hostile name is refused, never passed to ssh.
    for name in ["nosuch", "-oProxyCommand=sh", "../../etc/passwd"] {
        same_refusal(
            &home,
            block_on(crate::remote::check_host(name.to_owned())),
            "invalid_input",
            &["remote", "check", "--", name],
        );
        same_refusal(
            &home,
            block_on(crate::remote::remove_host(name.to_owned())),
            "invalid_input",
            &["remote", "rm", "--", name],
        );
    }
    // The migration wizard: a hostile host name is refused as `remote migrate` refuses it.
    for name in ["nosuch", "-oProxyCommand=sh", &format!("x; touch {s}")] {
        same_refusal(
            &home,
            block_on(crate::remote::migration_state(name.to_owned(), "p".into())),
            "invalid_input",
            &["remote", "migrate", "--project", "p", "--", name],
        );
        same_refusal(
            &home,
            block_on(crate::remote::run_migration_step(
                name.to_owned(),
                "p".into(),
                headroom_core::jobs::migrate::Step::Host,
                None,
                None,
                None,
                tauri::ipc::Channel::new(|_| Ok(())),
            )),
            "invalid_input",
            &[
                "remote",
                "migrate",
                "--project",
                "p",
                "--step",
                "host",
                "--",
                name,
            ],
        );
    }

    // Ledger commands: the same message for the same bad format; ids that name nothing.
    same_refusal(
        &home,
        block_on(crate::ledger::export_runs(vec![1], "exe".into())),
        "invalid_input",
        &["ledger", "export", "1", "--format", "exe"],
    );
    let e = block_on(crate::ledger::export_runs(Vec::new(), "html".into())).expect_err("no runs");
    assert_eq!(e.code, "invalid_input");
    let e = block_on(crate::ledger::export_runs((0..21).collect(), "html".into()))
        .expect_err("too many");
    assert_eq!(e.code, "invalid_input");
    let e = block_on(crate::ledger::compare_runs(3, 3)).expect_err("the same run twice");
    assert_eq!(e.code, "invalid_input");
    same_refusal(
        &home,
        block_on(crate::ledger::run_report(424_242)),
        "not_found",
        &["ledger", "show", "424242"],
    );
    let e = block_on(crate::commands::chart_for_run(-1)).expect_err("no run -1");
    assert_eq!(e.code, "not_found", "{e:?}");

    // The sweep and epochs forms: the budget, dtype, mode, shape and release the CLI parses.
    let form = SweepForm {
        workload: "mlp".into(),
        input_shape: None,
        device: "cpu".into(),
        dtype: "f32".into(),
        budget: "default".into(),
        max_batch: Some(8),
        mode: "train".into(),
        host: None,
        every_doubling: None,
    };
    for (form, cli_flag, value) in [
        (
            SweepForm {
                budget: "lots".into(),
                ..form.clone()
            },
            "--budget",
            "lots",
        ),
        (
            SweepForm {
                budget: "150%".into(),
                ..form.clone()
            },
            "--budget",
            "150%",
        ),
        (
            SweepForm {
                dtype: "f64;rm".into(),
                ..form.clone()
            },
            "--dtype",
            "f64;rm",
        ),
        (
            SweepForm {
                mode: "serve".into(),
                ..form.clone()
            },
            "--mode",
            "serve",
        ),
        (
            SweepForm {
                input_shape: Some("3x$(id)".into()),
                ..form.clone()
            },
            "--input-shape",
            "3x$(id)",
        ),
    ] {
        same_refusal(
            &home,
            request(&form),
            "invalid_input",
            &[
                "sweep",
                "--device",
                "cpu",
                "--max-batch",
                "8",
                cli_flag,
                value,
            ],
        );
    }
    let epochs = EpochsForm {
        workload: "mlp".into(),
        device: "cpu".into(),
        batch: 8,
        epochs: 2,
        steps_per_epoch: 2,
        release: "none".into(),
        leak_demo: false,
    };
    same_refusal(
        &home,
        epochs_request(
            &EpochsForm {
                release: "all; rm".into(),
                ..epochs.clone()
            },
            &EpochThresholds::default(),
        ),
        "invalid_input",
        &["epochs", "--device", "cpu", "--release", "all; rm"],
    );
    same_refusal(
        &home,
        epochs_request(
            &EpochsForm {
                batch: 0,
                ..epochs.clone()
            },
            &EpochThresholds::default(),
        ),
        "invalid_input",
        &["epochs", "--device", "cpu", "--batch", "0"],
    );
    // The same check refuses the same empty workload and largest batch of 0 in both shells.
    same_refusal(
        &home,
        epochs_request(
            &EpochsForm {
                workload: " ".into(),
                ..epochs
            },
            &EpochThresholds::default(),
        ),
        "invalid_input",
        &["epochs", "--device", "cpu", "--workload", " "],
    );
    for (form, flag, value) in [
        (
            SweepForm {
                max_batch: Some(0),
                ..form.clone()
            },
            "--max-batch",
            "0",
        ),
        (
            SweepForm {
                workload: "".into(),
                ..form.clone()
            },
            "--workload",
            "",
        ),
    ] {
        same_refusal(
            &home,
            request(&form),
            "invalid_input",
            &["sweep", "--device", "cpu", flag, value],
        );
    }

    // Nothing of the above wrote a profile, an ssh config or a report, or ran the sentinel.
    assert!(!sentinel.exists(), "a shell ran an injected command");
    assert!(
        !home.join("hosts.toml").exists(),
        "a refused profile was saved"
    );
    assert!(
        !home.join("reports").exists(),
        "a refused export wrote files"
    );
    assert!(
        !home.join("ssh").join("config.d").join("headroom").exists()
            || std::fs::read_to_string(home.join("ssh/config.d/headroom"))
                .is_ok_and(|t| !t.contains("touch")),
        "an injected value reached the ssh config"
    );
}
