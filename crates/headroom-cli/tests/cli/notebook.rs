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

/// `PATH` with the venv's `bin` first (where `jupyter` is).
fn venv_path() -> std::ffi::OsString {
    let bin = python().parent().expect("bin").to_path_buf();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH")
}

/// `headroom run --json ARGS` with the venv's `bin` first on `PATH`.
fn run(home: &Home, args: &[&str]) -> (std::process::Output, Value) {
    let out = home
        .cmd(&[&["run", "--json"][..], args].concat())
        .env("PATH", venv_path())
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
    // The cells' output came through as they ran (with --json, on stderr): each epoch's line of
    // both runs, and the loop's own count.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("epoch 6 loss ").count(), 2, "{err}");
    assert_eq!(err.matches("iterations 48").count(), 2, "{err}");
    let rows = rows.as_array().expect("one row per release");
    let (none, both) = (&rows[0]["run"], &rows[1]["run"]);
    for r in [none, both] {
        let command = r["command"].as_str().unwrap_or_default();
        assert!(
            command.ends_with(&format!("headroom_notebook.py {}", nb.display())),
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

/// The user at a Jupyter server (what JupyterLab runs on): waits for it, opens a kernel through
/// its REST API as the Lab does, runs the cells in it one at a time as a user does — the kernel
/// stays up between them —, prints the kernel's output, then shuts the server down.
const AT_THE_SERVER: &str = r#"
import glob, json, os, sys, time, urllib.request
from jupyter_client import BlockingKernelClient

base, token, runtime, cells = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])

def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, method=method, data=data,
                                 headers={"Authorization": "token " + token,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as r:
        text = r.read()
    return json.loads(text) if text else None

for _ in range(1200):
    try:
        call("GET", "/api/status")
        break
    except Exception:
        time.sleep(0.1)
else:
    sys.exit("the server never answered")
kernel = call("POST", "/api/kernels", {"name": "python3"})
for _ in range(600):
    found = glob.glob(os.path.join(runtime, "*" + kernel["id"] + "*.json"))
    if found:
        break
    time.sleep(0.1)
else:
    sys.exit("no connection file for kernel " + kernel["id"])
client = BlockingKernelClient(connection_file=found[0])
client.load_connection_file()
client.start_channels()
client.wait_for_ready(timeout=120)
out = []
def hook(msg):
    if msg["msg_type"] == "stream":
        out.append(msg["content"]["text"])
    elif msg["msg_type"] == "error":
        out.append("\n".join(msg["content"]["traceback"]))
for code in cells:
    reply = client.execute_interactive(code, timeout=300, output_hook=hook)
    if reply["content"]["status"] != "ok":
        sys.exit("a cell failed: " + "".join(out))
    time.sleep(0.3)
client.stop_channels()
print("".join(out), flush=True)
call("POST", "/api/shutdown")
"#;

#[test]
fn a_jupyter_server_is_observed_through_the_kernel_a_user_opens_in_it() {
    // `headroom run -- jupyter server` (JupyterLab's server, without the Lab's web files): a
    // kernel opened through its REST API and fed cells one by one is the training observed.
    let home = Home::new();
    let runtime = home.path().join("jupyter-runtime");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let token = "headroom-test-token";
    let root = s(home.path()).to_owned();
    let port_arg = format!("--port={port}");
    let token_arg = format!("--IdentityProvider.token={token}");
    let root_arg = format!("--ServerApp.root_dir={root}");
    let server = home
        .cmd(&[
            "run",
            "--json",
            "--",
            "jupyter",
            "server",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            &port_arg,
            "--port-retries=0",
            &token_arg,
            &root_arg,
        ])
        .env("PATH", venv_path())
        .env("JUPYTER_RUNTIME_DIR", &runtime)
        .env("JUPYTER_CONFIG_DIR", home.path().join("jupyter-config"))
        .env("JUPYTER_DATA_DIR", home.path().join("jupyter-data"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start headroom run -- jupyter server");
    let cells = serde_json::to_string(&cells("list")).expect("json");
    let user = std::process::Command::new(python())
        .args([
            "-c",
            AT_THE_SERVER,
            &format!("http://127.0.0.1:{port}"),
            token,
            s(&runtime),
            &cells,
        ])
        .env("JUPYTER_RUNTIME_DIR", &runtime)
        .output()
        .expect("run the user's side");
    let out = server.wait_with_output().expect("headroom run ends");
    let said = String::from_utf8_lossy(&user.stdout);
    assert!(
        user.status.success() && said.contains("iterations 48"),
        "{said}\n{}\nheadroom: {}",
        String::from_utf8_lossy(&user.stderr),
        String::from_utf8_lossy(&out.stderr)
    );
    let r = ok(
        &out,
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
    );
    assert!(
        r["command"]
            .as_str()
            .is_some_and(|c| c.contains("jupyter server")),
        "{r}"
    );
    // The kernel trained: its 6 passes of 8 batches of 64, each pass an epoch, and the
    // server (which never imports torch) is not the trainer.
    assert_eq!(r["observed"]["steps"], 48, "{r}");
    assert_eq!(r["observed"]["batch"], 64, "{r}");
    assert_eq!(r["epochs"].as_array().map(Vec::len), Some(6), "{r}");
    assert_eq!(r["verdict"]["kind"], "leak_suspected", "{r}");
    assert!(r["worker_bytes"].is_null(), "{r}");
}
