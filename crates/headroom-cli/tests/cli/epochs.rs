//! `headroom epochs` with real libtorch on the CPU: a true leak (`--leak-demo`) is flagged, the
//! same run without it is stable, every epoch is in the ledger, and bad input is refused.

use serde_json::Value;

use crate::common::Home;

/// `headroom epochs` on the CPU (mlp, batch 16, 6 epochs of 3 steps, one thread) plus `extra`,
/// which must succeed; its JSON document.
pub fn epochs(home: &Home, extra: &[&str]) -> Value {
    let mut args = vec![
        "epochs",
        "--device",
        "cpu",
        "--workload",
        "mlp",
        "--batch",
        "16",
        "--epochs",
        "6",
        "--steps-per-epoch",
        "3",
        "--threads",
        "1",
        "--json",
    ];
    args.extend_from_slice(extra);
    let (out, v) = home.json(&args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

#[test]
fn a_true_leak_is_flagged_and_the_same_run_without_it_is_stable() {
    let home = Home::new();
    let leak = epochs(&home, &["--leak-demo", "48"]);
    assert_eq!(leak["status"], "complete");
    let samples = leak["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 6);
    for s in samples {
        assert!(
            s["footprint_bytes"].as_u64().is_some_and(|b| b > 50 << 20),
            "{s}"
        );
        assert!(s["samples_per_s"].as_f64().is_some_and(|v| v > 0.0), "{s}");
        // The CPU keeps no allocator statistics: unknown, not zero.
        assert!(s["live_bytes"].is_null());
    }
    let v = &leak["verdict"];
    assert_eq!(v["kind"], "leak_suspected", "{v}");
    let growth = v["footprint"]["growth"].as_f64().expect("growth");
    // 5 × 48 MiB retained on top of a few hundred MiB.
    assert!(growth > 0.26, "footprint grew only {growth}");
    assert!(
        v["reason"]
            .as_str()
            .is_some_and(|r| r.contains("process footprint grew")),
        "{v}"
    );

    let clean = epochs(&home, &[]);
    let v = &clean["verdict"];
    assert_eq!(v["kind"], "stable", "{v}");
    assert!(v["footprint"]["projected_growth"]
        .as_f64()
        .is_some_and(|g| g < 0.26));

    // Both runs, with every epoch, are in the ledger.
    for run in [&leak, &clean] {
        let id = run["run_id"].as_i64().expect("run id").to_string();
        let (_, shown) = home.json(&["ledger", "show", &id, "--json"]);
        assert_eq!(shown["run"]["kind"], "epochs");
        assert_eq!(shown["run"]["status"], "complete");
        assert_eq!(shown["samples"].as_array().map(Vec::len), Some(6));
        assert_eq!(shown["run"]["report"]["kind"], run["verdict"]["kind"]);
    }
}

#[test]
fn bad_epoch_arguments_are_refused_with_the_fix() {
    let home = Home::new();
    let out = home.run(&["epochs", "--device", "cpu", "--release", "sometimes"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("use none, gc, empty-cache or both"), "{err}");
    let out = home.run(&["epochs", "--device", "cpu", "--epochs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(home.runs().is_empty(), "nothing recorded for bad input");
}
