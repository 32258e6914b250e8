//! `sweep --compare mlx` for real: the venv's MLX (its CPU build on Linux, installed by
//! scripts/bootstrap.sh) runs the same mlp step at the recommended batch next to Headroom's own
//! point; the comparison lands in the ledger and in `decide`'s MLX column.

use serde_json::Value;

use crate::common::{python, Home};

#[test]
fn mlx_runs_the_same_step_beside_headroom_and_decide_cites_it() {
    let home = Home::new();
    let py = python();
    let out = home.run(&[
        "sweep",
        "--workload",
        "mlp",
        "--device",
        "cpu",
        "--batches",
        "32",
        "--compare",
        "mlx",
        "--mlx-python",
        py.to_str().expect("utf-8"),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("sweep JSON");
    let c = &v["compare_mlx"];
    assert_eq!(c["workload"], "mlp", "{c}");
    assert_eq!(c["batch"], 32, "{c}");
    assert_eq!(c["torch_device"], "cpu", "{c}");
    assert!(
        c["mlx_device"].as_str().is_some_and(|d| d.contains("cpu")),
        "MLX's CPU build: {c}"
    );
    let (mlx, torch) = (
        c["mlx_samples_per_s"].as_f64().expect("mlx samples/s"),
        c["torch_samples_per_s"].as_f64().expect("torch samples/s"),
    );
    assert!(mlx > 0.0 && torch > 0.0, "{c}");
    assert!((c["ratio"].as_f64().expect("ratio") - mlx / torch).abs() < 1e-9);
    assert!(c["mlx_peak_bytes"].as_u64().is_some_and(|b| b > 0), "{c}");
    // Headroom's side is the sweep's own point at that batch.
    let point = &v["points"][0];
    assert_eq!(c["torch_samples_per_s"], point["samples_per_s"], "{v}");
    // Recorded, and cited by the decision table.
    let runs = home.runs();
    let rec = runs
        .iter()
        .find(|r| r["kind"] == "mlx-compare")
        .expect("an mlx-compare run");
    assert_eq!(rec["status"], "complete", "{rec}");
    let d = home.run(&["decide", "--json"]);
    let d: Value = serde_json::from_slice(&d.stdout).expect("decide JSON");
    assert_eq!(d["facts"]["mlx"]["run_id"], rec["id"], "{}", d["facts"]);
    let col = d["decision"]["columns"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["column"] == "mlx"))
        .expect("the MLX column");
    assert!(
        col["reasons"]
            .as_array()
            .is_some_and(|rs| rs.iter().any(|r| r["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("mlp at batch 32: MLX (")))),
        "{col}"
    );
}

/// A model like the user's: the built-in `cnn` (a small ResNet) written with `mlx.nn`, the same
/// contract on both sides (3x32x32, f32, the batch), said beside the result.
#[test]
fn mlx_runs_the_cnn_on_the_same_contract() {
    let home = Home::new();
    let py = python();
    let out = home.run(&[
        "sweep",
        "--workload",
        "cnn",
        "--device",
        "cpu",
        "--batches",
        "2",
        "--compare",
        "mlx",
        "--mlx-python",
        py.to_str().expect("utf-8"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("cnn (3x32x32, f32) at batch 2: MLX ("))
        .unwrap_or_else(|| panic!("no MLX line with its contract in {text}"));
    assert!(
        line.contains(" samples/s") && line.contains("vs Headroom on cpu"),
        "{line}"
    );
    // The comparison comes before the answer, which stays the last line on screen.
    let last = text.lines().last().unwrap_or_default();
    assert!(last.starts_with("recommended: batch 2 · "), "{text}");
    let rec = home
        .runs()
        .into_iter()
        .find(|r| r["kind"] == "mlx-compare")
        .expect("an mlx-compare run");
    assert_eq!(rec["workload"], "cnn", "{rec}");
}

#[test]
fn a_python_without_mlx_is_named_with_the_fix() {
    let home = Home::new();
    // The system Python has no mlx (bootstrap installs it into the venv only).
    let out = home.run(&[
        "sweep",
        "--workload",
        "mlp",
        "--device",
        "cpu",
        "--batches",
        "8",
        "--compare",
        "mlx",
        "--mlx-python",
        "/usr/bin/python3",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("mlx is not installed in /usr/bin/python3") && err.contains("mlx[cpu]"),
        "{err}"
    );
}
