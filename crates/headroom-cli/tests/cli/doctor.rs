//! `headroom doctor` against real interpreters: the project venv's Python with torch 2.11.0, a
//! fresh venv without torch, a path that does not exist, a file that is not a program, an
//! interpreter that hangs and one that crashes. The report on this Linux machine must be true.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Instant;

use serde_json::Value;

use crate::common::{python, Home};

fn light<'a>(doc: &'a Value, backend: &str) -> &'a Value {
    doc["lights"]
        .as_array()
        .and_then(|ls| ls.iter().find(|l| l["backend"] == backend))
        .unwrap_or_else(|| panic!("no {backend} light in {doc}"))
}

/// `headroom ARGS` with no active environment (so only the named interpreters are asked).
fn json_without_env(home: &Home, args: &[&str]) -> (std::process::Output, Value) {
    let out = home
        .cmd(args)
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .output()
        .expect("run headroom");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, doc)
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).expect("write script");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p.display().to_string()
}

#[test]
fn the_venv_python_is_found_ready_on_the_cpu_and_nothing_false_is_claimed() {
    let home = Home::new();
    let py = python();
    let py = py.to_str().expect("utf-8 path");
    let (out, doc) = json_without_env(&home, &["doctor", "--python", py, "--only-named", "--json"]);
    assert!(
        out.status.success(),
        "doctor found something red on this machine: {}",
        serde_json::to_string_pretty(&doc["lights"]).unwrap_or_default()
    );
    let pythons = doc["pythons"].as_array().expect("pythons");
    let me = &pythons[0];
    assert_eq!(me["status"], "ok", "{me}");
    assert_eq!(doc["primary"], 0);
    let torch = &me["facts"]["torch"];
    assert!(
        torch["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("2.11.0")),
        "{torch}"
    );
    // Linux: MPS neither built nor available, the matmul ran on the CPU (no GPU here).
    assert_eq!(torch["mps_built"], false);
    assert_eq!(torch["mps_available"], false);
    let on_gpu = torch["cuda_available"] == true;
    assert_eq!(
        torch["matmul_device"],
        if on_gpu { "cuda:0" } else { "cpu" },
        "{torch}"
    );
    // The interpreter's architecture, both as it says and as its ELF header says.
    let arch = std::env::consts::ARCH;
    assert_eq!(me["facts"]["machine"], arch);
    assert_eq!(me["binary_archs"][0], arch);
    // No Rosetta, no MPS claimed.
    assert_eq!(doc["machine"]["apple_silicon"], false);
    assert!(doc["machine"]["translated"].is_null());
    assert_eq!(light(&doc, "mps")["state"], "off");
    assert_eq!(
        light(&doc, "cpu")["state"],
        "green",
        "{}",
        light(&doc, "cpu")
    );
    assert!(!doc.to_string().contains("Rosetta"));
    // Headroom's own libtorch, asked in its worker.
    let lib = &doc["libtorch"];
    assert_eq!(lib["version"], "2.11.0");
    assert_eq!(lib["has_mps"], false);
    assert_eq!(lib["devices"][0]["device"], "cpu");
    assert_eq!(lib["devices"][0]["matmul_ok"], true);
    assert!(lib["devices"][0]["matmul_ms"]
        .as_f64()
        .is_some_and(|m| m > 0.0));
    // Same torch as Headroom: no drift note, and a release torch: no pre-release note.
    let notes = doc["notes"].as_array().cloned().unwrap_or_default();
    assert!(
        !notes.iter().any(|n| {
            let n = n.as_str().unwrap_or_default();
            n.contains("version drift") || n.contains("pre-release") || n.contains("nightly")
        }),
        "{notes:?}"
    );
    // This machine as it is: in a Docker container (its /.dockerenv), MPS is a gate of its own
    // and a note says where Headroom runs; elsewhere, nothing of the kind.
    let iso = &doc["machine"]["isolation"];
    let mps_reason = light(&doc, "mps")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if std::path::Path::new("/.dockerenv").exists() {
        assert_eq!(iso["container"], "Docker", "{iso}");
        assert!(
            mps_reason.contains("runs in a Docker container")
                && mps_reason.contains("gets no Metal"),
            "{mps_reason}"
        );
        assert!(
            notes.iter().any(|n| n
                .as_str()
                .is_some_and(|n| n.contains("Headroom runs in a Docker container"))),
            "{notes:?}"
        );
    } else if iso.is_null() {
        assert!(
            mps_reason.starts_with("MPS is Apple's Metal backend"),
            "{mps_reason}"
        );
    }
    // Recorded in the ledger as a doctor run with the whole report.
    let id = doc["run_id"].as_i64().expect("run id");
    let (_, shown) = home.json(&["ledger", "show", &id.to_string(), "--json"]);
    assert_eq!(shown["run"]["kind"], "doctor");
    assert_eq!(shown["run"]["status"], "complete");
    assert_eq!(shown["run"]["report"]["lights"], doc["lights"]);
    let human = home.run(&["ledger", "show", &id.to_string()]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("[ ok ] cpu"), "{text}");
}

#[test]
fn the_human_report_finds_interpreters_by_itself() {
    let home = Home::new();
    // VIRTUAL_ENV names the project venv, as `source .venv/bin/activate` would.
    let py = python();
    let venv = py
        .parent()
        .and_then(Path::parent)
        .expect("venv root")
        .to_path_buf();
    let out = home
        .cmd(&["doctor"])
        .env("VIRTUAL_ENV", &venv)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "[ ok ] cpu",
        "[ -- ] mps",
        "libtorch  2.11.0",
        "[VIRTUAL_ENV]",
        "recorded as run",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
    let runs = home.runs();
    assert_eq!(runs[0]["kind"], "doctor");
}

#[test]
fn missing_broken_torchless_hanging_and_crashing_interpreters_are_reported_not_fatal() {
    let home = Home::new();
    let dir = tempfile::tempdir().expect("dir");
    let bare = dir.path().join("bare");
    let made = std::process::Command::new(python())
        .args(["-m", "venv", "--without-pip"])
        .arg(&bare)
        .status()
        .expect("python -m venv");
    assert!(made.success(), "cannot make a bare venv");
    let bare_py = bare.join("bin/python").display().to_string();
    let hang = script(dir.path(), "hang-python", "#!/bin/sh\nexec sleep 30\n");
    let crash = script(dir.path(), "crash-python", "#!/bin/sh\nkill -SEGV $$\n");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a program").expect("write");
    let missing = dir.path().join("nowhere/bin/python3").display().to_string();
    let started = Instant::now();
    let (out, doc) = json_without_env(
        &home,
        &[
            "doctor",
            "--only-named",
            "--timeout",
            "4",
            "--python",
            &bare_py,
            "--python",
            &missing,
            "--python",
            text.to_str().expect("utf-8"),
            "--python",
            &hang,
            "--python",
            &crash,
            "--json",
        ],
    );
    let took = started.elapsed().as_secs_f64();
    assert!(out.status.code().is_some(), "doctor itself must not crash");
    let pythons = doc["pythons"].as_array().expect("pythons");
    assert_eq!(pythons.len(), 5, "{doc}");
    let by = |path: &str| {
        pythons
            .iter()
            .find(|p| p["path"] == path)
            .unwrap_or_else(|| panic!("{path} not in {doc}"))
    };
    let b = by(&bare_py);
    assert_eq!(b["status"], "ok");
    assert!(b["facts"]["torch"].is_null());
    assert!(
        b["facts"]["torch_error"]
            .as_str()
            .is_some_and(|e| e.contains("No module named 'torch'")),
        "{b}"
    );
    let m = by(&missing);
    assert_eq!(m["status"], "not_found");
    assert!(m["error"]
        .as_str()
        .is_some_and(|e| e.contains("does not exist") && e.contains("--python")));
    let t = by(text.to_str().expect("utf-8"));
    assert_eq!(t["status"], "failed");
    assert!(
        t["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot run")),
        "{t}"
    );
    let h = by(&hang);
    assert_eq!(h["status"], "timed_out");
    assert!(
        h["error"].as_str().is_some_and(|e| e.contains("4 s")),
        "{h}"
    );
    let c = by(&crash);
    assert_eq!(c["status"], "crashed");
    assert!(
        c["error"].as_str().is_some_and(|e| e.contains("signal 11")),
        "{c}"
    );
    // The named interpreter that ran is the one judged: no torch there is a yellow CPU light
    // with the install command.
    assert_eq!(doc["primary"], 0);
    let cpu = light(&doc, "cpu");
    if cpu["state"] != "red" {
        // (red only if Headroom's own worker was too slow for the 4 s limit on a loaded machine)
        assert_eq!(cpu["state"], "yellow", "{cpu}");
        assert!(
            cpu["fix"]
                .as_str()
                .is_some_and(|f| f.contains("pip install torch")),
            "{cpu}"
        );
    }
    // Probes run three at a time and the hang is stopped at 4 s: far from 30 s.
    assert!(took < 25.0, "doctor took {took:.1} s");
}

#[test]
fn a_nonsense_timeout_is_refused() {
    let home = Home::new();
    let out = home.run(&["doctor", "--timeout", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--timeout must be a positive number"), "{err}");
}
