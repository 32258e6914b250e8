//! Notebooks observed as scripts are: executed top to bottom by `jupyter execute`
//! (`headroom run --notebook`) and by `jupyter nbconvert --execute` under `headroom run --`, in
//! a real ipykernel kernel started by Jupyter (ipykernel, nbclient and nbconvert are test
//! dependencies).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{python, reasons, Home};

/// A classifier trained for six passes of its DataLoader, one cell per stage; after each pass
/// 96 MiB of tensor is kept in a list (`KEEP = "list"`: a reference leak no release frees) or
/// left in a reference cycle with the automatic collector off (`KEEP = "cycle"`: garbage only
/// `gc.collect()` gives back). The loop counts its own iterations.
fn cells(keep: &str) -> Vec<String> {
    vec![
        format!(
            "import gc\nimport torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, TensorDataset\nKEEP = {keep:?}\nif KEEP == \"cycle\":\n    gc.disable()"
        ),
        "torch.manual_seed(3)\nx = torch.randn(512, 16)\ny = (x[:, 0] > 0).long()\nloader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)\nmodel = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nkept = []\nclass Node:\n    pass".into(),
        "iterations = 0\nfor epoch in range(6):\n    for xb, yb in loader:\n        loss = nn.functional.cross_entropy(model(xb), yb)\n        opt.zero_grad()\n        loss.backward()\n        opt.step()\n        iterations += 1\n    block = torch.ones(96 << 18)\n    if KEEP == \"list\":\n        kept.append(block)\n    else:\n        n = Node()\n        n.me, n.block = n, block\n        del n\n    del block\n    print(f\"epoch {epoch + 1} loss {loss.item():.4f}\")\nprint(\"iterations\", iterations)".into(),
    ]
}

/// The notebook file (nbformat 4.4, the cells' outputs empty).
fn notebook(home: &Home, name: &str, keep: &str) -> PathBuf {
    let cells: Vec<Value> = cells(keep)
        .into_iter()
        .map(|source| {
            json!({"cell_type": "code", "execution_count": null, "metadata": {},
                   "outputs": [], "source": source})
        })
        .collect();
    let nb = json!({
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 4
    });
    let path = home.path().join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(&nb).expect("json")).expect("write notebook");
    path
}

/// `headroom run --json ARGS` with the venv's `bin` first on `PATH` (where `jupyter` is).
fn run(home: &Home, args: &[&str]) -> (std::process::Output, Value) {
    let bin = python().parent().expect("bin").to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let out = home
        .cmd(&[&["run", "--json"][..], args].concat())
        .env("PATH", path)
        .output()
        .expect("run headroom");
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, v)
}

fn ok(out: &std::process::Output, v: Value) -> Value {
    assert!(
        out.status.success() && !v.is_null(),
        "{:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

#[test]
fn a_notebook_is_observed_with_its_epochs_and_released_as_a_script_is() {
    // `--notebook` with and without the release: the leak survives it, and decide escalates.
    let home = Home::new();
    let nb = notebook(&home, "leak.ipynb", "list");
    let (out, rows) = run(
        &home,
        &["--notebook", s(&nb), "--sweep", "release=none,both"],
    );
    let rows = ok(&out, rows);
    let rows = rows.as_array().expect("one row per release");
    let (none, both) = (&rows[0]["run"], &rows[1]["run"]);
    for r in [none, both] {
        let command = r["command"].as_str().unwrap_or_default();
        assert!(
            command.ends_with(&format!("jupyter execute {}", nb.display())),
            "{r}"
        );
        // The kernel is the trainer, not a DataLoader worker of Jupyter's.
        assert!(r["worker_bytes"].is_null(), "{r}");
        assert_eq!(r["epochs"].as_array().map(Vec::len), Some(6), "{r}");
        // The notebook's own count: 6 passes of 8 batches.
        assert_eq!(r["observed"]["steps"], 48, "{r}");
        assert_eq!(r["observed"]["batch"], 64, "{r}");
        assert_eq!(r["verdict"]["kind"], "leak_suspected", "{r}");
    }
    assert_eq!(both["observed"]["release_forced"], "both", "{both}");
    let persists = reasons(&home, "leak_persists");
    assert_eq!(persists.len(), 1, "{persists:?}");
    assert!(
        persists[0].contains(&format!("your run {}", both["run_id"])),
        "{}",
        persists[0]
    );

    // A notebook executed by nbconvert under `run --`: garbage the release frees is no leak,
    // and a sync in a cell is named by the cell IPython gives it.
    let home = Home::new();
    let nb = notebook(&home, "cycle.ipynb", "cycle");
    let done = home.path().join("done.ipynb");
    let (out, r) = run(
        &home,
        &[
            "--release",
            "gc",
            "--",
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            s(&nb),
            "--output",
            s(&done),
        ],
    );
    let r = ok(&out, r);
    assert_eq!(r["epochs"].as_array().map(Vec::len), Some(6), "{r}");
    assert_eq!(r["observed"]["steps"], 48, "{r}");
    assert_eq!(r["observed"]["release_forced"], "gc", "{r}");
    assert_eq!(r["verdict"]["kind"], "stable", "{r}");
    let site = r["observed"]["sync_site"].as_str().unwrap_or_default();
    assert!(site.starts_with("In[3] line "), "{site}");
    // The notebook ran to its end: its own output says so.
    let written = std::fs::read_to_string(&done).expect("the executed notebook");
    assert!(written.contains("iterations 48"), "{written}");
}

#[test]
fn a_file_that_is_not_a_notebook_is_refused_before_anything_runs() {
    let home = Home::new();
    let py = home.path().join("train.py");
    std::fs::write(&py, "print('hi')\n").expect("write");
    let (out, _) = run(&home, &["--notebook", s(&py)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "--notebook {}: not a Jupyter notebook",
            py.display()
        )),
        "{err}"
    );
    assert!(home.runs().is_empty(), "nothing ran, nothing recorded");
    let nb = notebook(&home, "a.ipynb", "list");
    let (out, _) = run(&home, &["--notebook", s(&nb), "--", "python", "x.py"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("leave out --project and the command after --"));
}
