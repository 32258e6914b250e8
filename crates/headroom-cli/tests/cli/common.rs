//! Running the binary in a temp home.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A temp `HEADROOM_HOME` and a way to run `headroom` in it.
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_headroom"));
        // The user's Python each run records beside Headroom's libtorch: this venv's.
        c.args(args)
            .env("HEADROOM_HOME", self.path())
            .env("HEADROOM_PYTHON", python())
            .current_dir(self.path());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run headroom")
    }

    /// Runs with `--json` and parses stdout; panics with stderr when it is not JSON.
    pub fn json(&self, args: &[&str]) -> (Output, Value) {
        let out = self.run(args);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}); status {:?}\nstdout: {}\nstderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out, v)
    }

    /// `headroom sweep --device cpu ARGS --json`, which must succeed; its JSON document.
    pub fn cpu_sweep(&self, args: &[&str]) -> Value {
        let all = [&["sweep", "--device", "cpu"][..], args, &["--json"]].concat();
        let (out, v) = self.json(&all);
        assert!(
            out.status.success(),
            "{all:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        v
    }

    /// The runs in the ledger, newest first.
    pub fn runs(&self) -> Vec<Value> {
        let (out, v) = self.json(&["ledger", "list", "--json"]);
        assert!(
            out.status.success(),
            "ledger list failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        v.as_array().cloned().expect("ledger list is an array")
    }
}

/// `headroom run --json [pre…] -- python ARGS` with the venv's Python; stdout must be exactly
/// one JSON document.
pub fn run_python(home: &Home, pre: &[&str], args: &[&str]) -> (Output, Value) {
    let py = python();
    let all = [
        &["run", "--json"][..],
        pre,
        &["--", py.to_str().expect("utf-8")],
        args,
    ]
    .concat();
    home.json(&all)
}

/// The venv's Python with torch (set by scripts/test.sh; else the project's `.venv`).
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("HEADROOM_TEST_PYTHON") {
        return PathBuf::from(p);
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        p.exists(),
        "no Python with torch at {}; run scripts/bootstrap.sh or set HEADROOM_TEST_PYTHON",
        p.display()
    );
    p
}

pub fn points(v: &Value) -> Vec<Value> {
    v["points"].as_array().cloned().unwrap_or_default()
}

pub fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// The JSON document `run --json` prints: stdout holds it alone (the command's own output went
/// to stderr), `{` for one run and `[` for a sweep over the script.
pub fn after_output(stdout: &[u8], open: char) -> Value {
    let text = String::from_utf8_lossy(stdout);
    assert!(
        text.starts_with(open),
        "stdout must be the JSON document alone, starting with {open}: {text}"
    );
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {text}"))
}

/// Saves the TorchScript module that `source` (a Python script taking the output path as its
/// argument) exports, as `name` in `home`, with the venv's Python; returns its path.
/// torch.jit.script reads the class's source, so the script must be a file, not `-c`.
pub fn export_torchscript(home: &Home, name: &str, source: &str) -> PathBuf {
    let model = home.path().join(name);
    let script = home.path().join("export.py");
    std::fs::write(&script, source).expect("write export.py");
    let st = Command::new(python())
        .arg(&script)
        .arg(&model)
        .status()
        .expect("run python");
    assert!(st.success(), "python failed to export the model");
    model
}

/// The reasons `decide --json` gives under `rule`.
pub fn reasons(home: &Home, rule: &str) -> Vec<String> {
    let (out, d) = home.json(&["decide", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    d["decision"]["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter(|r| r["rule"] == rule)
        .map(|r| r["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}
