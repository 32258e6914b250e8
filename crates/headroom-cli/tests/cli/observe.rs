//! `headroom run` observing the user's own training from inside, with no code change: plain
//! PyTorch loops with a DataLoader written here (no markers, no Headroom imports), run through
//! the venv's real torch; what the observer reports, and what `decide` makes of it.

use std::process::Command;

use serde_json::Value;

use crate::common::{python, run_python, Home};

/// A plain training loop: 640 samples, batch 32 (20 batches an epoch), a small MLP, SGD. Options
/// change only what a researcher would change: workers, accumulation, autocast, and a list that
/// keeps a tensor per epoch (the classic leak).
const TRAIN: &str = r#"
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=0)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--autocast", action="store_true")
p.add_argument("--keep-mib", type=int, default=0)
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()

torch.manual_seed(1234)
x = torch.randn(640, 64)
y = torch.randint(0, 10, (640,))
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=a.workers)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
kept = []
for epoch in range(a.epochs):
    for i, (xb, yb) in enumerate(loader):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast):
            loss = nn.functional.cross_entropy(model(xb), yb) / a.accum
        loss.backward()
        if (i + 1) % a.accum == 0:
            opt.step()
            opt.zero_grad()
    if a.keep_mib:
        kept.append(torch.ones(a.keep_mib * 262144))
    print(f"epoch {epoch + 1} loss {loss.item():.4f}", flush=True)
"#;

fn write(home: &Home, name: &str, text: &str) -> String {
    let p = home.path().join(name);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).expect("dir");
    }
    std::fs::write(&p, text).expect("write");
    p.to_str().expect("utf-8").to_owned()
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "status {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

#[test]
fn a_plain_dataloader_loop_is_observed_with_no_markers_and_json_stays_parseable() {
    let home = Home::new();
    let script = write(&home, "train.py", TRAIN);
    for workers in ["0", "2"] {
        let (out, v) = run_python(&home, &[], &[&script, "--workers", workers]);
        ok(&out);
        // The script printed while it ran; with --json its output went to stderr.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("epoch 3 loss "), "{err}");
        let o = &v["observed"];
        assert_eq!(v["steps"], 60, "20 batches × 3 epochs: {v}");
        assert_eq!(o["steps"], 60, "{o}");
        assert_eq!(v["batch"], 32, "{v}");
        assert_eq!(o["batch"], 32, "{o}");
        assert_eq!(o["accumulation"], 1, "{o}");
        assert_eq!(o["device"], "cpu", "{o}");
        assert_eq!(o["seed"], 1234, "{o}");
        assert_eq!(o["compiled"], false);
        assert_eq!(o["autocast"].as_array().map(Vec::len), Some(0), "{o}");
        let loader = &o["loader"];
        assert_eq!(loader["num_workers"].to_string(), workers, "{loader}");
        assert_eq!(loader["pin_memory"], false);
        assert_eq!(loader["batch_size"], 32);
        assert_eq!(loader["worker_init_fn"], false);
        assert!(
            matches!(
                loader["start_method"].as_str(),
                Some("fork" | "spawn" | "forkserver")
            ),
            "{loader}"
        );
        assert!(
            o["torch_version"]
                .as_str()
                .is_some_and(|t| t.starts_with("2.11.0")),
            "{o}"
        );
        assert_eq!(v["torch_version"], o["torch_version"]);
        // Step time, throughput and the data share, with no marker in the script.
        assert!(num(&v, "step_ms_p50") > 0.0, "{v}");
        assert!(num(&v, "step_ms_p95") >= num(&v, "step_ms_p50"), "{v}");
        assert!(num(&v, "samples_per_s") > 0.0, "{v}");
        let share = num(&v, "data_share");
        assert!((0.0..=1.0).contains(&share), "{share}");
        assert!(
            num(&v, "data_ms_p50") > 0.0,
            "the loader's waits are timed: {v}"
        );
        // Three epochs from the loader's passes, each with the process's memory.
        let epochs = v["epochs"].as_array().expect("epochs");
        assert_eq!(epochs.len(), 3, "{v}");
        for e in epochs {
            assert!(
                e["footprint_bytes"].as_u64().is_some_and(|b| b > 50 << 20),
                "{e}"
            );
            assert!(e["samples_per_s"].as_f64().is_some_and(|s| s > 0.0), "{e}");
        }
        // The loader starts its workers again at each pass: whether they were still (or
        // already) there at an epoch's end must not move the epoch's footprint (two workers'
        // copy of torch once read as a +115 % leak).
        let prints: Vec<f64> = epochs
            .iter()
            .filter_map(|e| e["footprint_bytes"].as_f64())
            .collect();
        let (lo, hi) = prints
            .iter()
            .fold((f64::MAX, 0.0_f64), |(l, h), b| (l.min(*b), h.max(*b)));
        assert!(
            hi < lo * 1.2,
            "footprints {prints:?} with {workers} workers"
        );
        assert_eq!(v["verdict"]["kind"], "stable", "{}", v["verdict"]);
        // The ledger keeps the run with its observation.
        let id = v["run_id"].as_i64().expect("id").to_string();
        let (_, shown) = home.json(&["ledger", "show", &id, "--json"]);
        assert_eq!(shown["run"]["chosen_batch"], 32, "{shown}");
        assert_eq!(shown["run"]["report"]["observed"]["steps"], 60, "{shown}");
    }
}

#[test]
fn gradient_accumulation_and_cpu_autocast_are_seen() {
    let home = Home::new();
    let script = write(&home, "train.py", TRAIN);
    let (out, v) = run_python(&home, &[], &[&script, "--accum", "4", "--autocast"]);
    ok(&out);
    let o = &v["observed"];
    assert_eq!(o["accumulation"], 4, "{o}");
    assert_eq!(o["steps"], 15, "5 optimizer steps an epoch: {o}");
    assert_eq!(o["autocast"], serde_json::json!(["cpu:bfloat16"]), "{o}");
}

#[test]
fn a_python_m_package_launch_is_observed() {
    let home = Home::new();
    write(&home, "pkg/trainer/__init__.py", "");
    write(&home, "pkg/trainer/__main__.py", TRAIN);
    let mut c = home.cmd(&[
        "run",
        "--json",
        "--",
        python().to_str().expect("utf-8"),
        "-m",
        "trainer",
        "--epochs",
        "2",
    ]);
    c.current_dir(home.path().join("pkg"));
    let out = c.output().expect("run");
    ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["observed"]["steps"], 40, "{v}");
    assert_eq!(v["epochs"].as_array().map(Vec::len), Some(2), "{v}");
}

#[test]
fn the_environments_own_sitecustomize_still_runs() {
    let home = Home::new();
    let script = write(&home, "train.py", TRAIN);
    let site = home.path().join("site");
    write(
        &home,
        "site/sitecustomize.py",
        "import os\nopen(os.environ['MARK'], 'w').write('ran')\n",
    );
    let mark = home.path().join("mark");
    let py = python();
    let out = home
        .cmd(&[
            "run",
            "--json",
            "--",
            py.to_str().expect("utf-8"),
            &script,
            "--epochs",
            "1",
        ])
        .env("PYTHONPATH", &site)
        .env("MARK", &mark)
        .output()
        .expect("run");
    ok(&out);
    assert_eq!(
        std::fs::read_to_string(&mark).ok().as_deref(),
        Some("ran"),
        "the user's sitecustomize ran"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["observed"]["steps"], 20, "and Headroom's observed: {v}");
}

/// Bytes in odd shapes: a progress bar drawn with `\r`, a line with no newline at the end.
const PLAIN: &str = r#"
import sys, time
for i in range(5):
    sys.stdout.write(f"\rprogress {i * 25:3d}%")
    sys.stdout.flush()
    time.sleep(0.02)
sys.stdout.write("\ndone\xe2\x9c\x93 no newline")
sys.stderr.write("warn\n")
"#;

#[test]
fn a_script_without_torch_prints_exactly_what_it_prints_alone() {
    let home = Home::new();
    let script = write(&home, "plain.py", PLAIN);
    let py = python();
    let alone = Command::new(&py).arg(&script).output().expect("python");
    let wrapped = home.run(&["run", "--", py.to_str().expect("utf-8"), &script]);
    ok(&wrapped);
    assert_eq!(
        String::from_utf8_lossy(&wrapped.stdout),
        String::from_utf8_lossy(&alone.stdout)
    );
    assert_eq!(wrapped.stdout, alone.stdout, "byte for byte");
    let err = String::from_utf8_lossy(&wrapped.stderr);
    assert!(err.starts_with("warn\n"), "{err}");
    // Nothing was observed: no torch in that process.
    let (_, v) = run_python(&home, &[], &[&script]);
    assert_eq!(v["observed"], Value::Null, "{v}");
    assert_eq!(v["torch_version"], Value::Null, "{v}");
}

#[test]
fn no_instrument_leaves_the_program_unobserved() {
    let home = Home::new();
    let script = write(&home, "train.py", TRAIN);
    let (out, v) = run_python(&home, &["--no-instrument"], &[&script, "--epochs", "1"]);
    ok(&out);
    assert_eq!(v["observed"], Value::Null, "{v}");
    assert_eq!(v["steps"], 0, "no markers, no observer: {v}");
}

fn decide(home: &Home) -> Value {
    let (out, v) = home.json(&["decide", "--json"]);
    ok(&out);
    v
}

fn reasons(d: &Value, rule: &str) -> Vec<String> {
    d["decision"]["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter(|r| r["rule"] == rule)
        .filter_map(|r| r["text"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_leaking_loop_is_named_by_decide_citing_its_run() {
    let home = Home::new();
    let script = write(&home, "train.py", TRAIN);
    let (out, v) = run_python(&home, &[], &[&script, "--epochs", "6", "--keep-mib", "96"]);
    ok(&out);
    assert_eq!(v["verdict"]["kind"], "leak_suspected", "{}", v["verdict"]);
    let id = v["run_id"].as_i64().expect("id");
    let d = decide(&home);
    let leak = reasons(&d, "leak");
    assert_eq!(leak.len(), 1, "{d}");
    assert!(leak[0].contains(&format!("run {id}")), "{}", leak[0]);
    assert!(
        leak[0].contains("train.py"),
        "names the command: {}",
        leak[0]
    );
    assert!(leak[0].contains("batch 32"), "{}", leak[0]);
    assert_eq!(d["facts"]["epochs"]["run_id"], id, "{}", d["facts"]);
}

#[test]
fn a_loop_over_its_budget_is_an_out_of_memory_fact_in_decide() {
    let home = Home::new();
    let script = write(&home, "train.py", TRAIN);
    let (out, v) = run_python(
        &home,
        &["--budget", "900MiB", "--interval-ms", "100"],
        &[&script, "--epochs", "40", "--keep-mib", "128"],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["over_budget"], true, "{v}");
    let id = v["run_id"].as_i64().expect("id");
    let d = decide(&home);
    let oom = reasons(&d, "oom");
    assert_eq!(oom.len(), 1, "{d}");
    assert!(oom[0].contains(&format!("run {id}")), "{}", oom[0]);
    assert!(oom[0].contains("batch 32"), "{}", oom[0]);
    assert!(
        oom[0].contains("900.0 MiB") || oom[0].contains("900 MiB"),
        "{}",
        oom[0]
    );
}

/// A run that ends on torch's own out-of-memory error reports its message.
#[test]
fn an_out_of_memory_error_in_the_script_is_reported_with_its_message() {
    let home = Home::new();
    let script = write(
        &home,
        "oom.py",
        "import torch\nraise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 GiB')\n",
    );
    let (out, v) = run_python(&home, &[], &[&script]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["oom"], true, "{v}");
    assert!(
        v["observed"]["oom"]
            .as_str()
            .is_some_and(|m| m.contains("Tried to allocate 2.00 GiB")),
        "{v}"
    );
    let d = decide(&home);
    assert!(
        reasons(&d, "oom")
            .iter()
            .any(|r| r.contains("Tried to allocate 2.00 GiB")),
        "{d}"
    );
}

/// Data-parallel training as `torchrun` launches it: two CPU ranks (gloo) under the launcher,
/// each a Python of its own that reports with its pid; the run counts them and follows the
/// first rank to step.
const DDP: &str = r#"
import torch, torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
torch.manual_seed(0)
ds = TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,)))
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=16, sampler=sampler)
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
dist.destroy_process_group()
"#;

#[test]
fn torchrun_ranks_report_with_their_pids_and_the_run_counts_them() {
    let home = Home::new();
    let script = write(&home, "ddp.py", DDP);
    let (out, v) = run_python(
        &home,
        &[],
        &[
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            &script,
        ],
    );
    ok(&out);
    let o = &v["observed"];
    assert_eq!(o["stepping_processes"], 2, "two ranks stepped: {o}");
    assert!(
        o["processes"].as_u64().is_some_and(|n| n >= 3),
        "the launcher and both ranks imported torch: {o}"
    );
    // 256 samples over 2 ranks, batch 16: 8 steps an epoch on the followed rank.
    assert_eq!(o["steps"], 24, "{o}");
    assert_eq!(o["batch"], 16, "{o}");
    assert_eq!(v["epochs"].as_array().map(Vec::len), Some(3), "{v}");
}
