//! `headroom remote migrate` against a really fresh host: a user made for the test with an empty
//! home and a password (no Headroom, no project, no key), served by a real sshd on 127.0.0.1 that
//! reads that user's own `~/.ssh/authorized_keys`. The project is a plain script with a
//! DataLoader in a git repository. Each failure stops at its step with its fix and loses nothing.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::Home;
use crate::sshd::{free_port, FreshUser, Sshd};

fn headroom(home: &Home, args: &[&str], stdin: Option<&str>) -> Output {
    headroom_from(env!("CARGO_BIN_EXE_headroom").as_ref(), home, args, stdin)
}

/// `headroom` with `args`, which must succeed (its errors are the failure's message).
fn headroom_ok(home: &Home, args: &[&str]) -> Output {
    let out = headroom(home, args, None);
    assert!(
        out.status.success(),
        "headroom {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `headroom` run from `program` (a copy laid out as an installed bundle), with `home`'s
/// environment.
fn headroom_from(program: &Path, home: &Home, args: &[&str], stdin: Option<&str>) -> Output {
    let base = home.cmd(args);
    let mut c = Command::new(program);
    c.args(args).current_dir(home.path());
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.env("HEADROOM_SSH_DIR", home.path().join("ssh"));
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().expect("headroom");
    if let Some(s) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(s.as_bytes())
            .expect("write stdin");
    }
    child.wait_with_output().expect("headroom")
}

fn migrate(home: &Home, name: &str, extra: &[&str], stdin: Option<&str>) -> (Output, Value) {
    migrate_from(
        env!("CARGO_BIN_EXE_headroom").as_ref(),
        home,
        name,
        extra,
        stdin,
    )
}

fn migrate_from(
    program: &Path,
    home: &Home,
    name: &str,
    extra: &[&str],
    stdin: Option<&str>,
) -> (Output, Value) {
    let mut args = vec!["remote", "migrate", name, "--project", "train", "--json"];
    args.extend_from_slice(extra);
    let out = headroom_from(program, home, &args, stdin);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, v)
}

/// The steps this call ran, as (step, passed, detail, fix).
fn ran(v: &Value) -> Vec<(String, bool, String, String)> {
    v["ran"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            (
                r["step"].as_str().unwrap_or("?").to_owned(),
                r["passed"] == true,
                r["detail"].as_str().unwrap_or("").to_owned(),
                r["fix"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn add_host(home: &Home, name: &str, port: u16, user: &str, key: &Path, extra: &[&str]) {
    let port = port.to_string();
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
    headroom_ok(home, &args);
}

/// Adds (or replaces) project `train` in `dir` with `python` and `command`.
fn add_train(home: &Home, dir: &Path, python: &str, command: &[&str]) {
    let mut args = vec![
        "project",
        "add",
        "train",
        "--replace",
        "--dir",
        dir.to_str().expect("utf-8"),
        "--python",
        python,
        "--",
    ];
    args.extend_from_slice(command);
    headroom_ok(home, &args);
}

fn sh(dir: &Path, script: &str) {
    let st = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .expect("sh");
    assert!(st.success(), "{script}");
}

#[test]
fn a_project_moves_to_a_fresh_host_step_by_step_and_each_failure_stops_at_its_step() {
    let Some(user) = FreshUser::create() else {
        return;
    };
    let sshd = Sshd::start_with_passwords();
    let home = Home::new();
    // The project: a plain training script, its requirements, a git repository that ignores its
    // data folder, and a local environment folder that must not travel.
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join("data")).expect("proj");
    std::fs::write(
        proj.join("train.py"),
        "import argparse\nimport torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\
         p = argparse.ArgumentParser(); p.add_argument('--batch-size', type=int, default=8)\n\
         a = p.parse_args()\nds = TensorDataset(torch.randn(256, 8), torch.randn(256, 1))\n\
         m = torch.nn.Linear(8, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n\
         for x, y in DataLoader(ds, batch_size=a.batch_size):\n    opt.zero_grad(); torch.nn.functional.mse_loss(m(x), y).backward(); opt.step()\n",
    )
    .expect("train.py");
    std::fs::write(
        proj.join("requirements.txt"),
        "# the standard library and pip, which every fresh venv has: nothing to download\npip\n",
    )
    .expect("requirements");
    std::fs::write(proj.join(".gitignore"), "data/\n").expect("gitignore");
    std::fs::write(proj.join("data/big.bin"), vec![7u8; 4096]).expect("data");
    std::fs::create_dir_all(proj.join(".venv")).expect("venv");
    std::fs::write(proj.join(".venv/marker"), "local env").expect("marker");
    sh(
        &proj,
        "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm first",
    );
    // Here the project runs with this checkout's Python (torch in it).
    let venv_python = crate::common::python().display().to_string();
    add_train(
        &home,
        &proj,
        &venv_python,
        &["python3", "train.py", "--batch-size", "{batch}"],
    );
    // A key file that does not exist yet: the key step makes it.
    let key = home.path().join("keys/id_ed25519");
    add_host(&home, "box", sshd.port, &user.name, &key, &[]);

    // No password given: the host passes, the key stops with the fix.
    let (out, v) = migrate(&home, "box", &[], None);
    assert_eq!(out.status.code(), Some(3), "{v}");
    let r = ran(&v);
    assert_eq!((r[0].0.as_str(), r[0].1), ("host", true), "{r:?}");
    assert_eq!((r[1].0.as_str(), r[1].1), ("key", false), "{r:?}");
    assert!(r[1].3.contains("--password-stdin"), "{r:?}");
    assert_eq!(r.len(), 2, "nothing past the failed step ran");

    // A wrong password is refused at the key step.
    let (_, v) = migrate(
        &home,
        "box",
        &["--password-stdin"],
        Some("not-the-password\n"),
    );
    let r = ran(&v);
    assert_eq!(r[0].0, "key", "it resumes at the key: {r:?}");
    assert!(!r[0].1 && r[0].2.contains("refused the password"), "{r:?}");

    // The right one: the key is installed and proven, the check passes with the free disk
    // named, and Headroom is not on the fresh host.
    let (_, v) = migrate(
        &home,
        "box",
        &["--password-stdin"],
        Some(&format!("{}\n", user.password)),
    );
    let r = ran(&v);
    assert_eq!(
        r.iter().map(|x| (x.0.as_str(), x.1)).collect::<Vec<_>>(),
        [("key", true), ("check", true), ("headroom", false)],
        "{r:?}"
    );
    assert!(
        r[0].2.contains("installed") && r[0].2.contains("batch-mode login"),
        "{r:?}"
    );
    assert!(r[1].2.contains("free in headroom-projects/train"), "{r:?}");
    // This test's Headroom is a development build: it says it cannot be copied, and what to do.
    assert!(r[2].2.contains("development build"), "{r:?}");
    assert!(
        r[2].3.contains("installed Headroom") && r[2].3.contains("--headroom-path"),
        "{r:?}"
    );
    let keys = std::fs::read_to_string(user.home.join(".ssh/authorized_keys")).expect("keys");
    let public = std::fs::read_to_string(home.path().join("keys/id_ed25519.pub")).expect("pub");
    assert_eq!(keys.trim(), public.trim(), "installed once");
    // The password is nowhere in Headroom's files.
    let grep = Command::new("grep")
        .args(["-rF", &user.password])
        .arg(home.path())
        .output()
        .expect("grep");
    assert!(
        grep.stdout.is_empty(),
        "the password was stored: {}",
        String::from_utf8_lossy(&grep.stdout)
    );

    // From an installed bundle's layout (bin/headroom, bin/headroom-worker, lib/headroom/), the
    // step copies Headroom and its libraries there and names the new path in the profile; the
    // migration goes on to copy the project and make its environment, and stops where the steps
    // are not built.
    let bundle = home.path().join("bundle");
    std::fs::create_dir_all(bundle.join("bin")).expect("bin");
    std::fs::create_dir_all(bundle.join("lib/headroom")).expect("lib");
    let built = Path::new(env!("CARGO_BIN_EXE_headroom"));
    std::fs::copy(built, bundle.join("bin/headroom")).expect("headroom");
    std::fs::copy(
        built.with_file_name("headroom-worker"),
        bundle.join("bin/headroom-worker"),
    )
    .expect("worker");
    std::fs::write(bundle.join("lib/headroom/libtorch_marker.so"), "a library").expect("lib");
    let (out, v) = migrate_from(&bundle.join("bin/headroom"), &home, "box", &[], None);
    let r = ran(&v);
    // The long parts said how far they got while they ran: rsync's running total (this rsync
    // has one) for Headroom's files and the project's, and pip's own lines.
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.matches("copied 100 % (").count() >= 2
            && progress.contains("making the environment on box")
            && progress.contains("pip: Requirement already satisfied: pip"),
        "{progress}"
    );
    assert_eq!(
        r.iter().map(|x| (x.0.as_str(), x.1)).collect::<Vec<_>>(),
        [("headroom", true), ("project", true), ("training", false)],
        "{r:?}"
    );
    assert!(
        r[0].2.contains("answers there") && r[0].2.contains(".headroom/bin/headroom"),
        "{r:?}"
    );
    let copied = user.home.join(".headroom");
    assert!(copied.join("bin/headroom").is_file() && copied.join("bin/headroom-worker").is_file());
    assert_eq!(
        std::fs::read_to_string(copied.join("lib/headroom/libtorch_marker.so"))
            .ok()
            .as_deref(),
        Some("a library"),
        "the libraries sit where the worker's rpath ($ORIGIN/../lib/headroom) looks"
    );
    let out = headroom(&home, &["remote", "show", "box", "--json"], None);
    let shown: Value = serde_json::from_slice(&out.stdout).expect("show json");
    assert!(
        shown.to_string().contains(".headroom/bin/headroom"),
        "{shown}"
    );
    assert!(
        r[1].2.contains("checksums match") && r[1].2.contains(".venv made"),
        "{r:?}"
    );
    let there = user.home.join("headroom-projects/train");
    assert!(there.join("train.py").is_file() && there.join(".git").is_dir());
    assert!(!there.join("data").exists(), "git-ignored data stays here");
    assert!(
        r[1].2.contains(
            "left out as ignored or environment-only: .venv, data (copy any with --also-copy PATH"
        ),
        "what stayed here is named: {r:?}"
    );
    assert!(
        !there.join(".venv/marker").exists(),
        "the local environment stays here"
    );
    assert!(
        there.join(".venv/bin/python").exists(),
        "the remote made its own"
    );
    // The state is kept: the next call starts at the first step not passed.
    let state = &v["migration"]["steps"];
    assert_eq!(state["project"]["passed"], true, "{state}");

    // Its training there: the fresh environment has no torch (the requirements name none), so
    // the project's sweep there measures nothing, is recorded here anyway, and the step says so.
    assert!(
        r[2].2.contains("measured no batch") && r[2].2.contains("recorded here as sweep"),
        "{r:?}"
    );
    // Give that environment this checkout's torch (a .pth naming its site-packages: the same
    // Python minor version, and no 4.7 GB download into a throwaway home), then run the step
    // again: the project is swept there (batch=auto, on that machine's memory) and the sweep
    // lands in this ledger under the host's name, every point with it.
    crate::sshd::lend_torch(&there.join(".venv"), &crate::common::python());
    let (out, v) = migrate(&home, "box", &["--step", "training"], None);
    let r = ran(&v);
    assert!(r[0].1, "{r:?}");
    assert!(
        r[0].2.contains("recommended there") && r[0].2.contains("under host box"),
        "{r:?}"
    );
    // Its progress: what it does, then the sweep's own lines from there, as they came.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("sweeping the project there on cpu: batch=auto from 16")
            && said.contains("there: headroom: [1] batch 16: starting the command"),
        "{said}"
    );
    // Headroom's doctor there, on the project's environment, first: recorded here under the
    // host's name, so the runs there are compared by that machine's Python and torch.
    assert!(said.contains("doctor there: cpu: green"), "{said}");
    let (_, runs) = home.json(&["ledger", "list", "--json"]);
    let doctor = runs
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|r| r["host"] == "box" && r["kind"] == "doctor")
        .unwrap_or_else(|| panic!("no doctor run from box in {runs}"));
    let doctor_id = doctor["id"].as_i64().expect("id").to_string();
    let (_, shown) = home.json(&["ledger", "show", &doctor_id, "--json"]);
    assert!(
        shown
            .to_string()
            .contains("headroom-projects/train/.venv/bin/python"),
        "the project's environment there was the one asked: {shown}"
    );
    let swept = runs
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|r| r["host"] == "box" && r["kind"] == "sweep" && r["status"] == "complete")
        .unwrap_or_else(|| panic!("no complete sweep from box in {runs}"));
    assert!(
        swept["workload"]
            .as_str()
            .unwrap_or("")
            .contains(".venv/bin/python train.py --batch-size {batch}"),
        "{swept}"
    );
    assert!(swept["chosen_batch"].as_u64().is_some(), "{swept}");
    // The torch that ran there, as its observer saw it.
    assert!(
        swept["libtorch"]
            .as_str()
            .is_some_and(|v| v.starts_with("2.")),
        "{swept}"
    );
    let id = swept["id"].as_i64().expect("id").to_string();
    let (_, shown) = home.json(&["ledger", "show", &id, "--json"]);
    let measured = shown["points"].as_array().map_or(0, |p| {
        p.iter()
            .filter(|p| p["samples_per_s"].as_f64().is_some_and(|v| v > 0.0))
            .count()
    });
    assert!(measured >= 2, "{shown}");
    assert_eq!(
        v["ran"][0]["runs"].as_array().map(Vec::len),
        Some(1),
        "the sweep recorded here: {}",
        v["ran"][0]
    );

    // Side by side: nothing to compare before the project was swept here; after a sweep here,
    // both answers' figures and the decision table's verdict.
    let (_, v) = migrate(&home, "box", &[], None);
    let r = ran(&v);
    assert_eq!((r[0].0.as_str(), r[0].1), ("compare", false), "{r:?}");
    assert!(
        r[0].2.contains("never here")
            && r[0]
                .3
                .contains("headroom run --project train --sweep batch=auto"),
        "{r:?}"
    );
    let local = headroom(
        &home,
        &["run", "--project", "train", "--batch", "32", "--json"],
        None,
    );
    assert!(
        local.status.success(),
        "{}",
        String::from_utf8_lossy(&local.stderr)
    );
    // Recorded on the device its tensors were seen on from inside, not as a bare "process".
    let (_, runs) = home.json(&["ledger", "list", "--json"]);
    let mine = runs
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|r| r["host"] != "box" && r["kind"] == "run")
        .unwrap_or_else(|| panic!("no local run in {runs}"));
    assert_eq!(mine["device"], "cpu", "{mine}");
    let local = headroom(
        &home,
        &[
            "run",
            "--project",
            "train",
            "--sweep",
            "batch=auto",
            "--json",
        ],
        None,
    );
    let local: Value = serde_json::from_slice(&local.stdout)
        .unwrap_or_else(|_| panic!("the sweep here: {}", String::from_utf8_lossy(&local.stderr)));
    assert!(
        local["sweep"]["summary"]["recommended_batch"]
            .as_u64()
            .is_some(),
        "{local}"
    );
    let (_, v) = migrate(&home, "box", &["--step", "compare"], None);
    let r = ran(&v);
    assert!(r[0].1, "{r:?}");
    assert!(
        r[0].2.starts_with("here: batch ")
            && r[0].2.contains("; there: batch ")
            && r[0].2.contains(" on box)")
            && r[0].2.contains("at its own batch")
            && r[0].2.contains("the decision table now: "),
        "{r:?}"
    );
    // What only one side recorded is not a difference; this machine's power and battery were
    // not taken for the remote's (the run there was recorded from its output).
    assert!(
        !r[0].2.contains("vs unknown")
            && !r[0].2.contains("unknown vs")
            && !r[0].2.contains("host: ")
            && !r[0].2.contains("workload: "),
        "{r:?}"
    );
    // The two runs it compared, for the app's chart: the one here first.
    let runs = v["ran"][0]["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 2, "{}", v["ran"][0]);
    assert_eq!(runs[1].as_i64(), Some(id.parse::<i64>().expect("id")));
    let here = runs[0].as_i64().expect("here").to_string();
    let compared = headroom(&home, &["ledger", "compare", &here, &id], None);
    let compared = String::from_utf8_lossy(&compared.stdout);
    assert!(
        compared.contains(&format!(
            "run {id} has no conditions recorded (power, battery, Low Power Mode, thermal): it was recorded here from box's output"
        )) && !compared.contains(&format!("run {here} has no conditions")),
        "{compared}"
    );

    // The screen: nothing speaks VNC on the default port there; then a listener greeting as a
    // VNC server does (RFB's version line) is reached through the tunnel, and every step passed.
    let (_, v) = migrate(&home, "box", &[], None);
    let r = ran(&v);
    assert_eq!((r[0].0.as_str(), r[0].1), ("screen", false), "{r:?}");
    assert!(r[0].3.contains("Screen Sharing"), "{r:?}");
    let screen = std::net::TcpListener::bind("127.0.0.1:0").expect("screen");
    let screen_port = screen.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in screen.incoming().flatten() {
            let mut s = s;
            let _ = std::io::Write::write_all(&mut s, b"RFB 003.008\n");
        }
    });
    let installed = user.home.join(".headroom/bin/headroom");
    add_host(
        &home,
        "box",
        sshd.port,
        &user.name,
        &key,
        &[
            "--vnc-port",
            &screen_port.to_string(),
            "--headroom-path",
            installed.to_str().expect("utf-8"),
            "--replace",
        ],
    );
    let (out, v) = migrate(&home, "box", &["--step", "screen"], None);
    let r = ran(&v);
    assert!(r[0].1 && r[0].2.contains("RFB 003.008"), "{r:?}");
    assert!(out.status.success());
    let steps = &v["migration"]["steps"];
    for s in [
        "host", "key", "check", "headroom", "project", "training", "compare", "screen",
    ] {
        assert_eq!(steps[s]["passed"], true, "{s}: {steps}");
    }
    // Headroom already there: its step says so, with the doctor's lights there.
    let (_, v) = migrate(&home, "box", &["--step", "headroom"], None);
    let r = ran(&v);
    assert!(
        r[0].1 && r[0].2.contains(" answers on box; its doctor: ") && r[0].2.contains("cpu: "),
        "{r:?}"
    );

    // No requirements file: the project step stops with its fix; the copy is there.
    std::fs::remove_file(proj.join("requirements.txt")).expect("rm");
    std::fs::write(proj.join("notes.txt"), "new").expect("notes");
    let (out, v) = migrate(&home, "box", &["--step", "project"], None);
    assert_eq!(out.status.code(), Some(3));
    let r = ran(&v);
    assert!(!r[0].1 && r[0].2.contains("no requirements.txt"), "{r:?}");
    assert!(r[0].3.contains("pip freeze > requirements.txt"), "{r:?}");
    assert!(there.join("notes.txt").is_file(), "copied before the stop");

    // Asked to, the step copies an ignored folder too; the ask is kept and the steps after the
    // project's run again.
    std::fs::write(proj.join("requirements.txt"), "pip\n").expect("requirements");
    let (out, v) = migrate(
        &home,
        "box",
        &["--also-copy", "data/", "--step", "project"],
        None,
    );
    let r = ran(&v);
    assert!(out.status.success() && r[0].1, "{r:?}");
    assert!(
        r[0].2
            .contains("left out as ignored or environment-only: .venv (")
            && r[0].2.contains("copied as asked: data"),
        "{r:?}"
    );
    assert_eq!(
        std::fs::read(there.join("data/big.bin"))
            .expect("data copied")
            .len(),
        4096
    );
    assert!(
        !there.join(".venv/marker").exists(),
        "the environment still stays"
    );
    assert_eq!(v["migration"]["also_copy"], serde_json::json!(["data"]));
    assert!(
        v["migration"]["steps"].get("training").is_none(),
        "{}",
        v["migration"]
    );

    // A command that does not take the batch is not swept: it runs there once, at the batch it
    // sets itself, and is recorded here as a run under the host's name.
    add_train(&home, &proj, &venv_python, &["python3", "train.py"]);
    let (out, v) = migrate(&home, "box", &["--step", "training"], None);
    let r = ran(&v);
    assert!(out.status.success() && r[0].1, "{r:?}");
    assert!(
        r[0].2.starts_with("ran `.venv/bin/python train.py` in ")
            && r[0].2.contains("recorded here as run"),
        "{r:?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("at the batch its command sets"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A full remote disk: a 1 MiB tmpfs as the remote folder stops the check with its figures.
    if let Some(fs) = crate::tmpfs::Tmpfs::mount("size=1m") {
        sh(
            Path::new("/"),
            &format!(
                "chmod 755 {} && chown {}:{} {}",
                fs.at.parent().expect("parent").display(),
                user.name,
                user.name,
                fs.at.display()
            ),
        );
        std::fs::write(proj.join("data.bin"), vec![1u8; 2 << 20]).expect("big");
        let dir = fs.at.join("p");
        let (_, v) = migrate(
            &home,
            "box",
            &["--remote-dir", dir.to_str().expect("utf-8")],
            None,
        );
        let r = ran(&v);
        assert_eq!(r[0].0, "check", "a new folder checks again: {r:?}");
        assert!(
            !r[0].1 && r[0].2.contains("only") && r[0].2.contains("free in"),
            "{r:?}"
        );
        assert!(r[0].3.contains("--remote-dir"), "{r:?}");
        // Steps before it stand.
        assert_eq!(v["migration"]["steps"]["key"]["passed"], true);
    }

    // A port nothing listens on stops at the key step, with ssh's reason.
    add_host(&home, "dead", free_port(), &user.name, &key, &[]);
    let (_, v) = migrate(&home, "dead", &[], None);
    let r = ran(&v);
    assert_eq!((r[1].0.as_str(), r[1].1), ("key", false), "{r:?}");
    assert!(
        r[1].2.to_lowercase().contains("refused") || r[1].2.contains("nothing"),
        "{r:?}"
    );
    // A step out of order is refused with the one to run first.
    let out = headroom(
        &home,
        &[
            "remote",
            "migrate",
            "dead",
            "--project",
            "train",
            "--step",
            "project",
        ],
        None,
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs step key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
