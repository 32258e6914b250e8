//! `headroom numerics` on a plain training script written here: the model against a CPU copy in
//! f32, layer by layer, with no code change. On this CPU-only machine the compared side runs on
//! the CPU too: a clean model agrees to the last bit, bf16 autocast gives errors of bf16's order
//! (its 8-bit mantissa: a few parts in a thousand), and a layer perturbed on the compared side
//! (the observer's test-only switch) is caught at that layer and no earlier.

use serde_json::Value;

use crate::common::{export_torchscript, python, reasons, Home};

/// An MLP in a module of its own with dropout (the comparison runs both copies in eval mode),
/// Adam, hand-sliced batches (no DataLoader); it prints its own epochs.
const TRAIN: &str = r#"
import torch
from torch import nn
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        s.drop = nn.Dropout(0.1)
        s.head = nn.Linear(64, 10)
    def forward(s, x):
        return s.head(s.drop(s.body(x)))
m = Net()
opt = torch.optim.Adam(m.parameters(), 1e-3)
x = torch.randn(256, 32); y = torch.randint(0, 10, (256,))
for epoch in range(4):
    for i in range(0, 256, 32):
        loss = nn.functional.cross_entropy(m(x[i:i+32]), y[i:i+32])
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
"#;

/// `headroom numerics` on `script`; with `json`, the comparison from its JSON, else its text.
fn numerics(
    home: &Home,
    script: &str,
    pre: &[&str],
    env: &[(&str, &str)],
    json: bool,
) -> (Value, String) {
    let py = python();
    let args = [
        &["numerics"][..],
        if json { &["--json"][..] } else { &[][..] },
        pre,
        &["--", py.to_str().expect("utf-8"), script],
    ]
    .concat();
    let mut cmd = home.cmd(&args);
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("headroom");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    if !json {
        return (
            Value::Null,
            format!("{}{err}", String::from_utf8_lossy(&out.stdout)),
        );
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    (v["observed"]["numerics"].clone(), err)
}

fn rel(v: &Value, name: &str) -> f64 {
    v["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .find(|l| l["name"] == name)
        .and_then(|l| l["rel"].as_f64())
        .unwrap_or_else(|| panic!("no layer {name} in {v}"))
}

#[test]
fn a_perturbed_layer_is_caught_there_a_clean_model_passes_and_bf16_differs_by_its_order() {
    let home = Home::new();
    let script = home.path().join("train.py");
    std::fs::write(&script, TRAIN).expect("write");
    let script = script.to_str().expect("utf-8");

    // Clean, f32 on both sides: every layer, the output and the gradients agree within 1e-5.
    let (n, err) = numerics(&home, script, &["--tolerance", "1e-5"], &[], true);
    assert_eq!(n["device"], "cpu", "{n}");
    assert_eq!(n["dtype"], "f32");
    assert_eq!(n["mode"], "eval (dropout off)");
    let names: Vec<&str> = n["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    // In call order, the containers too; the dropout's output is compared as any layer's.
    assert_eq!(
        names,
        ["body.0", "body.1", "body.2", "body.3", "body", "drop", "head"],
        "{n}"
    );
    for l in n["layers"].as_array().expect("layers") {
        assert!(l["rel"].as_f64().is_some_and(|r| r <= 1e-5), "{l}");
    }
    assert_eq!(
        n["grads"].as_array().map(Vec::len),
        Some(6),
        "three layers' weights and biases"
    );
    // The script's own training went on after the comparison, until the few steps
    // `headroom numerics` lets it run.
    assert!(
        err.contains("stopping the command at its limit of 3 steps")
            || err.contains("epoch 3 loss"),
        "{err}"
    );
    let (_, text) = numerics(&home, script, &["--tolerance", "1e-5"], &[], false);
    assert!(
        text.contains("numerics: cpu f32 agrees with cpu f32 within 1.0e-5 everywhere (7 layers"),
        "{text}"
    );

    // bf16 autocast on the compared side: the first Linear already differs by bf16's order
    // (above 1e-4, below 2 %), and the verdict names it as the first past 1e-3.
    let (n, _) = numerics(&home, script, &["--dtype", "bf16"], &[], true);
    assert_eq!(n["dtype"], "bf16");
    let first = rel(&n, "body.0");
    assert!((1e-4..2e-2).contains(&first), "{first}");
    // With the f32 reference on the program's device (the CPU here, as the model is), the
    // same comparison: the dtype's own difference there.
    let (n, _) = numerics(
        &home,
        script,
        &["--dtype", "bf16", "--reference", "device"],
        &[],
        true,
    );
    assert_eq!(
        (n["reference"].as_str(), n["device"].as_str()),
        (Some("cpu f32"), Some("cpu")),
        "{n}"
    );
    assert!((rel(&n, "body.0") - first).abs() < 1e-9, "{n}");

    // One layer wrong by 4 % on the compared side: caught there, the layers before it clean.
    let perturb = [("HEADROOM_NUMERICS_PERTURB", "body.2")];
    let (n, _) = numerics(&home, script, &[], &perturb, true);
    assert!(rel(&n, "body.0") < 1e-6 && rel(&n, "body.1") < 1e-6, "{n}");
    assert!((rel(&n, "body.2") - 0.04).abs() < 1e-3, "{n}");
    let (_, text) = numerics(&home, script, &[], &perturb, false);
    assert!(
        text.contains(
            "numerics: layer `body.2` on cpu f32 differs from cpu f32 by 4.00 % (tolerance 1.0e-3)"
        ),
        "{text}"
    );
    // Each is kept as a run, and `decide` cites the newest comparison with its run.
    let runs = home.runs();
    assert_eq!(runs.len(), 6, "{:?}", runs.len());
    let cited = reasons(&home, "numerics");
    assert_eq!(cited.len(), 1, "{cited:?}");
    assert!(
        cited[0].starts_with("layer `body.2` on cpu f32 differs from cpu f32 by 4.00 %")
            && cited[0].ends_with(&format!("(run {})", runs[0]["id"])),
        "{cited:?} {}",
        runs[0]
    );
}

/// A TorchScript model whose top-level children run in order (an `nn.Sequential`), exported by
/// the venv's Python.
const SEQUENTIAL: &str = r#"
import sys, torch
from torch import nn
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
torch.jit.script(m).save(sys.argv[1])
"#;

/// `headroom numerics --json --workload W ARGS`: the report, and the ledger run it names.
fn workload(home: &Home, w: &str, args: &[&str], env: &[(&str, &str)]) -> (Value, i64) {
    let mut cmd = home.cmd(&[&["numerics", "--json", "--workload", w][..], args].concat());
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("headroom");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["status"], "complete", "{v}");
    (v["report"].clone(), v["run_id"].as_i64().expect("run id"))
}

fn names(n: &Value) -> Vec<String> {
    n["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .filter_map(|l| l["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_built_in_model_and_a_torchscript_file_are_compared_in_the_worker_layer_by_layer() {
    let home = Home::new();
    // The built-in cnn, f32 on both sides: every top-level layer, the output and the gradients
    // agree within 1e-5 (here to the last bit: the same kernels on the same CPU).
    let (n, id) = workload(&home, "cnn", &["--tolerance", "1e-5", "--batch", "4"], &[]);
    assert_eq!(
        (n["device"].as_str(), n["dtype"].as_str()),
        (Some("cpu"), Some("f32"))
    );
    // Kept at the batch it compared, and as neither training nor inference.
    let run = home
        .runs()
        .into_iter()
        .find(|r| r["id"].as_i64() == Some(id))
        .expect("its run");
    assert_eq!(
        (&run["chosen_batch"], &run["mode"]),
        (&Value::from(4), &Value::Null),
        "{run}"
    );
    assert!(n["tf32"].is_null(), "no TF32 on the CPU: {n}");
    assert_eq!(
        names(&n),
        ["stem", "s0b0", "s0b1", "s1b0", "s1b1", "s2b0", "s2b1", "head"],
        "{n}"
    );
    let all_rel = |n: &Value| -> Vec<f64> {
        n["layers"]
            .as_array()
            .expect("layers")
            .iter()
            .chain(n["grads"].as_array().expect("grads"))
            .chain(std::iter::once(&n["output"]))
            .map(|c| c["rel"].as_f64().expect("rel"))
            .collect()
    };
    assert!(all_rel(&n).iter().all(|r| *r <= 1e-5), "{n}");
    assert_eq!(
        n["grads"].as_array().map(Vec::len),
        Some(20),
        "the worst 20 of its gradients"
    );

    // bf16 on the compared side: the stem already differs by bf16's order, above 1e-4 and
    // below 2 %; the verdict names the first layer past 1e-3.
    let (n, _) = workload(&home, "cnn", &["--dtype", "bf16", "--batch", "4"], &[]);
    let stem = rel(&n, "stem");
    assert!((1e-4..2e-2).contains(&stem), "{stem} {n}");
    let (m, _) = workload(
        &home,
        "cnn",
        &["--dtype", "bf16", "--batch", "4", "--reference", "device"],
        &[],
    );
    assert_eq!(m["reference"], "cpu f32", "{m}");
    assert!((rel(&m, "stem") - stem).abs() < 1e-12, "{m}");

    // One layer 4 % wrong on the compared side: caught there, the layers before it exact.
    let (n, id) = workload(
        &home,
        "cnn",
        &["--batch", "4"],
        &[("HEADROOM_NUMERICS_PERTURB", "s1b0")],
    );
    assert_eq!(
        (rel(&n, "stem"), rel(&n, "s0b0"), rel(&n, "s0b1")),
        (0.0, 0.0, 0.0),
        "{n}"
    );
    assert!((rel(&n, "s1b0") - 0.04).abs() < 1e-4, "{n}");
    let cited = reasons(&home, "numerics");
    assert_eq!(cited.len(), 1, "{cited:?}");
    assert!(
        cited[0].starts_with("layer `s1b0` on cpu f32 differs from cpu f32 by 4.00 %")
            && cited[0].ends_with(&format!("(run {id})")),
        "{cited:?}"
    );
    let runs = home.runs();
    assert_eq!(runs[0]["kind"], "numerics", "{}", runs[0]);
    assert_eq!(runs[0]["workload"], "cnn");

    // A TorchScript file: its children compared one by one in f32, a perturbed one caught.
    let model = export_torchscript(&home, "seq.pt", SEQUENTIAL);
    let m = model.to_str().expect("utf-8");
    let (n, _) = workload(
        &home,
        m,
        &["--input-shape", "16", "--tolerance", "1e-5"],
        &[],
    );
    assert_eq!(names(&n), ["0", "1", "2", "3", "4"], "{n}");
    assert!(all_rel(&n).iter().all(|r| *r <= 1e-5), "{n}");
    assert_eq!(
        n["grads"].as_array().map(Vec::len),
        Some(6),
        "three Linears' weights and biases"
    );
    let (n, _) = workload(
        &home,
        m,
        &["--input-shape", "16"],
        &[("HEADROOM_NUMERICS_PERTURB", "2")],
    );
    assert_eq!((rel(&n, "0"), rel(&n, "1")), (0.0, 0.0), "{n}");
    assert!((rel(&n, "2") - 0.04).abs() < 1e-4, "{n}");
    // In bf16 its children are not cast: the output and gradients are compared, and it says so.
    let (n, _) = workload(&home, m, &["--input-shape", "16", "--dtype", "bf16"], &[]);
    assert!(names(&n).is_empty(), "{n}");
    assert!(
        n["mode"]
            .as_str()
            .is_some_and(|m| m.contains("compared in f32 only")),
        "{n}"
    );
    assert!(
        n["output"]["rel"]
            .as_f64()
            .is_some_and(|r| r > 1e-4 && r < 0.05),
        "{n}"
    );

    // A TorchScript file without its input shape: a clear error, nothing recorded.
    let before = home.runs().len();
    let out = home.run(&["numerics", "--workload", m]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs --input-shape"), "{err}");
    assert_eq!(home.runs().len(), before);
}

/// TRAIN with a model that warns as PyTorch's MPS backend does when an operator falls back to
/// the CPU (PyTorch says it once per process, at the first call; there is no MPS here to make it
/// say so itself).
const FALLS_BACK: &str = r#"
import warnings, torch
from torch import nn
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
        s.warned = False
    def forward(s, x):
        if not s.warned:
            s.warned = True
            warnings.warn("The operator 'aten::_linalg_solve_ex.result' is not currently supported on the MPS backend and will fall back to run on the CPU. This may have performance implications.")
        return s.body(x)
m = Net()
opt = torch.optim.SGD(m.parameters(), 0.1)
x = torch.randn(128, 32); y = torch.randint(0, 10, (128,))
for epoch in range(2):
    for i in range(0, 128, 32):
        loss = nn.functional.cross_entropy(m(x[i:i+32]), y[i:i+32])
        opt.zero_grad(); loss.backward(); opt.step()
"#;

#[test]
fn the_operators_that_fell_back_to_the_cpu_by_the_compared_pass_are_named_with_the_verdict() {
    let home = Home::new();
    let script = home.path().join("train.py");
    std::fs::write(&script, FALLS_BACK).expect("write");
    let script = script.to_str().expect("utf-8");
    let (n, _) = numerics(&home, script, &[], &[], true);
    assert_eq!(
        n["fallback_ops"],
        serde_json::json!(["aten::_linalg_solve_ex.result"]),
        "{n}"
    );
    let (_, text) = numerics(&home, script, &[], &[], false);
    assert!(
        text.contains("; 1 operator fell back to the CPU by then (aten::_linalg_solve_ex.result): it was computed there"),
        "{text}"
    );
    // A script that warns of nothing has none.
    let clean = home.path().join("clean.py");
    std::fs::write(&clean, TRAIN).expect("write");
    let (n, _) = numerics(&home, clean.to_str().expect("utf-8"), &[], &[], true);
    assert!(n.get("fallback_ops").is_none(), "{n}");
}

/// A run stopped after a number of steps (`--steps`, and `numerics`'s few) has its observer
/// send what it saw every 0.02 s instead of every 0.25 s, so the stop comes within a few steps
/// of the limit: the script sees the setting and is stopped long before its loop's end. How
/// close to the limit is timing, measured rather than asserted here: on this 2-core VM a loop
/// of 30 ms steps asked to stop at 4 ran 4 (it ran 10 with the 0.25 s buffering);
/// `bench/settle_overrun.py` measures the same for a sweep's starts. Each step's stamp is
/// written as the step begins: the stop can land between the fourth step and a stamp written
/// after it (a CI run counted 3).
#[test]
fn a_run_stopped_after_its_steps_hears_of_them_promptly() {
    let home = Home::new();
    let script = home.path().join("steps.py");
    let stamps = home.path().join("stamps");
    std::fs::write(
        &script,
        r#"
import os, sys, time, torch
print("flush", os.environ.get("HEADROOM_FLUSH_S"), flush=True)
m = torch.nn.Linear(8, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
out = open(sys.argv[1], "a", buffering=1)
for i in range(200):
    out.write(f"{i + 1}\n")
    opt.zero_grad(); m(torch.randn(4, 8)).sum().backward(); opt.step()
    time.sleep(0.03)
"#,
    )
    .expect("script");
    let (out, run) = crate::common::run_python(
        &home,
        &["--steps", "4"],
        &[
            script.to_str().expect("utf-8"),
            stamps.to_str().expect("utf-8"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("flush 0.02"), "{err}");
    assert!(
        err.contains("stopping the command at its limit of 4 steps"),
        "{err}"
    );
    let ran = std::fs::read_to_string(&stamps)
        .expect("stamps")
        .lines()
        .count();
    assert!((4..50).contains(&ran), "ran {ran} of 200 steps: {run}");
}
