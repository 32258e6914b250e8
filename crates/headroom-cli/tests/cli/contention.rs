//! `headroom contention` on real processes: stand-ins named like a conferencing app and an IDE
//! (the venv's Python under those names) hold real memory, the IDE with a helper child, and
//! contention attributes each to its group, summing the IDE's tree.

#[cfg(target_os = "linux")]
use std::io::{BufRead, BufReader};
#[cfg(target_os = "linux")]
use std::path::Path;
#[cfg(target_os = "linux")]
use std::process::{Child, Command, Stdio};

use serde_json::Value;

#[cfg(target_os = "linux")]
use crate::common::python;
use crate::common::Home;

// The stand-ins below serve the Linux-only attribution test further down.

/// A process killed when the test ends.
#[cfg(target_os = "linux")]
struct Killed(Child);

#[cfg(target_os = "linux")]
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Python holding `mib` MiB (every page touched), then `extra` code, then waiting up to a
/// minute for its parent to go (so a killed stand-in does not leave its helper behind).
#[cfg(target_os = "linux")]
fn holder(mib: u32, extra: &str) -> String {
    format!(
        "import os, sys, time, subprocess\nparent = os.getppid()\nb = bytearray({mib} << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n{extra}\nprint('ready', flush=True)\nfor _ in range(300):\n    if os.getppid() != parent: break\n    time.sleep(0.2)\n"
    )
}

/// Starts `exe -c code` and waits for its `ready` line.
#[cfg(target_os = "linux")]
fn start(exe: &Path, code: &str) -> Killed {
    let mut child = Command::new(exe)
        .args(["-c", code])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", exe.display()));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    assert_eq!(line.trim(), "ready");
    Killed(child)
}

#[cfg(target_os = "linux")]
fn group<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["group"] == name))
        .unwrap_or_else(|| panic!("no group {name} in {v}"))
}

#[test]
#[cfg(target_os = "linux")]
fn a_call_and_an_ide_holding_memory_are_attributed_and_raise_contention() {
    let home = Home::new();
    let bin = tempfile::tempdir().expect("bin dir");
    // The kernel names a process after the file it was started from: these are "zoom.us",
    // "Code" and "Code Helper" to everything that lists processes.
    let real = std::fs::canonicalize(python()).expect("python");
    for name in ["zoom.us", "Code", "Code Helper"] {
        std::os::unix::fs::symlink(&real, bin.path().join(name)).expect("symlink");
    }
    let helper = bin.path().join("Code Helper");
    let helper_code = holder(120, "");
    let _zoom = start(&bin.path().join("zoom.us"), &holder(300, ""));
    let spawn_helper = format!(
        "h = subprocess.Popen([{:?}, '-c', {:?}], stdout=subprocess.PIPE)\nh.stdout.readline()",
        helper.display().to_string(),
        helper_code
    );
    let _ide = start(&bin.path().join("Code"), &holder(80, &spawn_helper));

    let (out, v) = home.json(&["contention", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conf = group(&v, "conferencing");
    assert!(
        conf["bytes"].as_u64().is_some_and(|b| b >= 300 << 20),
        "{conf}"
    );
    assert_eq!(conf["apps"][0]["name"], "zoom.us", "{conf}");
    let ide = group(&v, "ide");
    // The IDE and its helper child, summed as one app.
    assert_eq!(ide["apps"][0]["name"], "Code", "{ide}");
    assert_eq!(ide["apps"][0]["processes"], 2, "{ide}");
    assert!(
        ide["bytes"].as_u64().is_some_and(|b| b >= 200 << 20),
        "{ide}"
    );
    assert!(v["system"]["total_bytes"].as_u64().is_some_and(|b| b > 0));
    assert!(v["sample_ms"].as_f64().is_some_and(|ms| ms > 0.0));

    // With a config that makes any share too much and any availability too little, the same
    // processes raise contention, and the reason cites their figures. No process counts as a
    // local LLM server here: the test beside this one starts an "ollama" at the same time.
    std::fs::write(
        home.path().join("config.toml"),
        "[contention]\napps_share = 0.0001\nreserve_share = 1.0\nllm_servers = []\n",
    )
    .expect("config");
    let (_, v) = home.json(&["contention", "--json"]);
    assert_eq!(v["raised"], true, "{v}");
    let reason = v["reasons"][0].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("conferencing and IDEs hold "),
        "{reason}"
    );
    let text = home.run(&["contention"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("CONTENTION RAISED"), "{text}");
    assert!(text.contains("zoom.us"), "{text}");
}

/// A local LLM server (a stand-in named `ollama`, as Ollama's daemon is) is a group of its own,
/// counts toward contention with the call and the IDE, and the decision names it.
#[test]
#[cfg(target_os = "linux")]
fn a_local_llm_server_holding_memory_is_named_in_contention_and_the_decision() {
    let home = Home::new();
    let bin = tempfile::tempdir().expect("bin dir");
    let real = std::fs::canonicalize(python()).expect("python");
    std::os::unix::fs::symlink(&real, bin.path().join("ollama")).expect("symlink");
    let _llm = start(&bin.path().join("ollama"), &holder(250, ""));
    let (out, v) = home.json(&["contention", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let llm = group(&v, "local_llm");
    assert_eq!(llm["apps"][0]["name"], "ollama", "{llm}");
    assert!(
        llm["bytes"].as_u64().is_some_and(|b| b >= 250 << 20),
        "{llm}"
    );
    std::fs::write(
        home.path().join("config.toml"),
        "[contention]\napps_share = 0.0001\nreserve_share = 1.0\n",
    )
    .expect("config");
    let (_, v) = home.json(&["contention", "--json"]);
    let reason = v["reasons"][0].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("conferencing, IDEs and local LLM servers (ollama "),
        "{reason}"
    );
    let (out, d) = home.json(&["decide", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        d.to_string()
            .contains("memory contention: conferencing, IDEs and local LLM servers (ollama "),
        "{d}"
    );
    let text = home.run(&["contention"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("local LLM servers") && text.contains("ollama"),
        "{text}"
    );
}

#[test]
fn a_malformed_config_is_named_and_nothing_runs() {
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "[contention]\napps_shar = 0.3\n",
    )
    .expect("config");
    let out = home.run(&["contention"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.toml is malformed"), "{err}");
    assert!(err.contains("apps_shar"), "{err}");
    let watch = home.run(&["contention", "--watch", "--count", "2", "--interval", "0"]);
    assert_eq!(watch.status.code(), Some(2));
}

#[test]
fn watch_prints_one_json_line_per_sample_with_swap_growth_after_the_first() {
    let home = Home::new();
    let out = home.run(&[
        "contention",
        "--watch",
        "--count",
        "2",
        "--interval",
        "1",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per line"))
        .collect();
    assert_eq!(lines.len(), 2);
    if cfg!(target_os = "linux") {
        assert!(lines[0]["swap_growth_bytes"].is_null());
        assert!(lines[1]["swap_growth_bytes"].is_i64(), "{}", lines[1]);
    }
}
