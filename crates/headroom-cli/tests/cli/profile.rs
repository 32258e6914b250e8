//! `headroom profile` for real: the step split and per-layer forward times through the worker.
//! A TorchScript model exported by the venv's Python hides one deliberately slow layer (a loop
//! of element-wise ops, no weights); the profile names it, against its share of the FLOPs. The
//! built-in models' layers carry their exact FLOPs.

use serde_json::Value;

use crate::common::{export_torchscript, Home};

const EXPORT: &str = r"
import sys, torch
class Slow(torch.nn.Module):
    def forward(self, x):
        for _ in range(300):
            x = torch.tanh(x) * 1.0001
        return x
model = torch.nn.Sequential(
    torch.nn.Linear(64, 256), torch.nn.ReLU(), Slow(), torch.nn.Linear(256, 10))
torch.jit.script(model).save(sys.argv[1])
";

fn profile(home: &Home, args: &[&str]) -> Value {
    let mut all = vec!["profile", "--device", "cpu", "--json"];
    all.extend_from_slice(args);
    let out = home.run(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("profile JSON")
}

#[test]
fn the_profile_names_the_deliberately_slow_layer() {
    let home = Home::new();
    let model = export_torchscript(&home, "slow.pt", EXPORT);
    let v = profile(
        &home,
        &[
            "--workload",
            model.to_str().expect("utf-8"),
            "--input-shape",
            "64",
            "--batch",
            "16",
            "--reps",
            "5",
        ],
    );
    let layers = v["report"]["layers"].as_array().expect("layers");
    let names: Vec<&str> = layers.iter().filter_map(|l| l["name"].as_str()).collect();
    assert_eq!(names, ["0", "1", "2", "3"], "{v}");
    let slow = &layers[2];
    assert!(slow["time_share"].as_f64().is_some_and(|s| s > 0.5), "{v}");
    assert_eq!(slow["flops_share"].as_f64(), Some(0.0), "no weights: {v}");
    // The linear layers' FLOPs from their weights: 2·64·256 and 2·256·10 per sample.
    let f = |i: usize| layers[i]["flops"].as_f64().expect("flops");
    assert_eq!(f(0), 2.0 * 64.0 * 256.0 * 16.0);
    assert_eq!(f(3), 2.0 * 256.0 * 10.0 * 16.0);
    assert_eq!(layers[1]["output_shape"], serde_json::json!([16, 256]));
    assert!(
        v["slow_layer"]
            .as_str()
            .is_some_and(|s| s.starts_with("one layer is slow: 2 takes")),
        "{v}"
    );
    // The step split as a sweep point has it.
    let p = &v["report"]["point"];
    for k in ["step_ms_p50", "data_ms", "forward_ms", "backward_ms"] {
        assert!(p[k].as_f64().is_some_and(|x| x >= 0.0), "{k}: {p}");
    }
    assert_eq!(v["status"], "complete");
    assert!(home.runs().iter().any(|r| r["kind"] == "profile"));
}

#[test]
fn the_built_in_layers_carry_their_flops_and_matmul_says_it_has_none() {
    let home = Home::new();
    let v = profile(&home, &["--workload", "mlp", "--batch", "8", "--reps", "3"]);
    let layers = v["report"]["layers"].as_array().expect("layers");
    let names: Vec<&str> = layers.iter().filter_map(|l| l["name"].as_str()).collect();
    assert_eq!(names, ["fc1", "fc2", "fc3"]);
    let share = |ls: &[Value], i: usize| ls[i]["flops_share"].as_f64().expect("share");
    let total = 784.0 * 1024.0 + 1024.0 * 1024.0 + 1024.0 * 10.0;
    assert!(
        (share(layers, 0) - 784.0 * 1024.0 / total).abs() < 1e-9,
        "{v}"
    );
    assert!((share(layers, 0) + share(layers, 1) + share(layers, 2) - 1.0).abs() < 1e-9);
    // The ResNet: stem, six blocks, head; a stride-2 block's convolutions run on a quarter of
    // the pixels, with a 1×1 shortcut: 2·(32·9·64 + 64·9·64 + 32·64)·16·16 per sample.
    let v = profile(&home, &["--workload", "cnn", "--batch", "2", "--reps", "1"]);
    let layers = v["report"]["layers"].as_array().expect("layers");
    let names: Vec<&str> = layers.iter().filter_map(|l| l["name"].as_str()).collect();
    assert_eq!(
        names,
        ["stem", "s0b0", "s0b1", "s1b0", "s1b1", "s2b0", "s2b1", "head"]
    );
    let s1b0 = layers[3]["flops"].as_f64().expect("flops");
    assert_eq!(
        s1b0,
        2.0 * f64::from(32 * 9 * 64 + 64 * 9 * 64 + 32 * 64) * 256.0 * 2.0
    );
    assert_eq!(
        layers[3]["output_shape"],
        serde_json::json!([2, 64, 16, 16])
    );
    let sum: f64 = (0..layers.len()).map(|i| share(layers, i)).sum();
    assert!((sum - 1.0).abs() < 1e-9, "{v}");
    // One operation, no layers: the report says so instead of guessing.
    let v = profile(
        &home,
        &["--workload", "matmul", "--batch", "1", "--reps", "1"],
    );
    assert!(v["report"]["layers"].as_array().is_some_and(Vec::is_empty));
    assert!(
        v["report"]["layers_note"]
            .as_str()
            .is_some_and(|n| n.contains("not available for matmul")),
        "{v}"
    );
}
