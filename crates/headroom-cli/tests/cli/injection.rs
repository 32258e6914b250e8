//! Injection attempts through every text a user (or a pasted config) hands Headroom: host names,
//! users, identity paths, jump hosts, remote paths, the artifact store, workload paths, regexes
//! and the `run` command line. Each is refused with a message or passed on as an inert argument;
//! none reaches a shell. A sentinel file that any interpretation would create must never appear.

use std::path::Path;

use crate::common::Home;

fn sentinel(home: &Home) -> std::path::PathBuf {
    home.path().join("pwned")
}

fn assert_untouched(home: &Home, what: &str) {
    assert!(
        !sentinel(home).exists(),
        "{what} was interpreted by a shell"
    );
}

fn refused_with(home: &Home, args: &[&str], expect: &str) {
    let out = home
        .cmd(args)
        .env("HEADROOM_SSH_DIR", home.path().join("ssh"))
        .output()
        .expect("headroom");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?} was accepted: {err}");
    assert!(err.contains(expect), "{args:?}: {err}");
    assert_untouched(home, &format!("{args:?}"));
}

#[test]
fn hostile_remote_profiles_are_refused_and_nothing_is_written() {
    let home = Home::new();
    let p = sentinel(&home);
    let touch = format!("touch {}", p.display());
    let sub = format!("$({touch})");
    let tick = format!("`{touch}`");
    let semi = format!("h;{touch}");
    let proxy = format!("-oProxyCommand={touch}");
    let newline = format!("key\nProxyCommand {touch}");
    let base = |extra: &[&str]| {
        let mut a = vec!["remote", "add", "box", "--host", "127.0.0.1"];
        a.extend_from_slice(extra);
        a.iter().map(|s| (*s).to_owned()).collect::<Vec<String>>()
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "remote".into(),
                "add".into(),
                semi.clone(),
                "--host".into(),
                "h".into(),
            ],
            "name",
        ),
        (
            vec![
                "remote".into(),
                "add".into(),
                "box".into(),
                "--host".into(),
                semi.clone(),
            ],
            "host",
        ),
        (
            vec![
                "remote".into(),
                "add".into(),
                "box".into(),
                format!("--host={proxy}"),
            ],
            "host",
        ),
        (base(&["--user", &sub]), "user"),
        (base(&["--user", &tick]), "user"),
        (base(&[&format!("--jump={proxy}")]), "is refused"),
        (base(&["--identity", &newline]), "identity"),
        (base(&["--headroom-path", &newline]), "headroom path"),
        (
            base(&[&format!("--artifact-store={proxy}")]),
            "artifact store",
        ),
    ];
    for (args, expect) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused_with(&home, &args, expect);
    }
    // Nothing reached the ssh folder.
    let managed = home.path().join("ssh/config.d/headroom");
    let text = std::fs::read_to_string(&managed).unwrap_or_default();
    assert!(!text.contains("touch"), "{text}");
    let out = home
        .cmd(&["remote", "list", "--json"])
        .env("HEADROOM_SSH_DIR", home.path().join("ssh"))
        .output()
        .expect("list");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    // Asking for a round trip to a hostile target is refused before any connection.
    refused_with(
        &home,
        &["remote", "rtt", &format!("{sub}:22")],
        "artifact store",
    );
}

#[test]
fn the_run_command_line_and_sweep_values_are_inert_arguments() {
    let home = Home::new();
    let p = sentinel(&home);
    let touch = format!("touch {}", p.display());
    // A whole shell line as the program: not found, never split by a shell.
    let line = format!("{touch}; echo hi");
    let out = home.run(&["run", "--", &line]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot start"));
    assert_untouched(&home, "the program name");
    // Metacharacters as arguments reach the program as they are.
    let sub = format!("$({touch})");
    let out = home.run(&["run", "--", "/bin/echo", &sub, ";", "|", "&&", &touch]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("{sub} ; | && {touch}")), "{said}");
    assert_untouched(&home, "echo's arguments");
    // A sweep value is substituted as one argument, not as shell text.
    let value = format!("1;{touch}");
    let out = home.run(&[
        "run",
        "--sweep",
        &format!("bs={value},2"),
        "--",
        "/bin/echo",
        "batch={bs}",
    ]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("batch={value}")), "{said}");
    assert_untouched(&home, "a sweep value");
}

#[test]
fn hostile_paths_and_patterns_are_refused_with_a_reason() {
    let home = Home::new();
    let p = sentinel(&home);
    let model = format!("$(touch {}).pt", p.display());
    let out = home.run(&[
        "sweep",
        "--device",
        "cpu",
        "--workload",
        &model,
        "--input-shape",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&model),
        "names the path it could not use: {err}"
    );
    assert_untouched(&home, "a workload path");
    // A regex that does not compile: refused, with the pattern's error.
    let out = home.run(&["run", "--epoch-regex", "(epoch", "--", "/bin/true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("regex"));
    // A dataset path is read as a path, never expanded.
    let out = home.run(&[
        "sweep",
        "--device",
        "cpu",
        "--batches",
        "1",
        "--data",
        &format!("$(touch {})", p.display()),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_untouched(&home, "a --data path");
    assert!(!Path::new("pwned").exists());
}
