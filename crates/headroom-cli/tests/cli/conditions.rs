//! The machine's state read through real jobs on this machine: a CPU sweep's points and a
//! `headroom run` each carry what was read while they were timed, and what this machine could
//! not read is said once. On a VM without RAPL or a GPU there is no energy, and the test says
//! which case it checked.

use serde_json::Value;

use crate::common::{points, python, run_python, Home};

/// The energy is either measured (joules over the span, a source named) or named as not
/// readable here, never silently absent.
fn energy_or_reason(c: &Value, first: bool) {
    match c["energy_j"].as_f64() {
        Some(j) => {
            assert!(j >= 0.0, "{c}");
            assert!(c["energy_source"].is_string(), "{c}");
        }
        None if first => {
            let why = c["unavailable"].to_string();
            assert!(why.contains("RAPL") || why.contains("power"), "{c}");
        }
        None => assert!(c.get("unavailable").is_none(), "said once: {c}"),
    }
}

#[test]
fn a_sweeps_points_and_a_run_carry_the_conditions_they_were_timed_in() {
    let home = Home::new();
    let v = home.cpu_sweep(&[
        "--workload",
        "mlp",
        "--batches",
        "8,64",
        "--steps",
        "30",
        "--threads",
        "1",
    ]);
    let pts = points(&v);
    assert_eq!(pts.len(), 2);
    for (i, p) in pts.iter().enumerate() {
        let c = &p["conditions"];
        assert!(c.is_object(), "point {i} has its conditions: {p}");
        assert!(c["seconds"].as_f64().unwrap_or(-1.0) >= 0.0, "{c}");
        // Read at both ends of its timed steps, however short they were.
        assert!(c["samples"].as_u64().unwrap_or(0) >= 2, "{c}");
        energy_or_reason(c, i == 0);
    }
    // A user's run: read from the end of its warm-up to its end.
    let script = home.path().join("train.py");
    std::fs::write(
        &script,
        "import time\nfor i in range(30):\n    time.sleep(0.1)\n    print('headroom-step', flush=True)\n    if i % 10 == 0:\n        print(f'epoch {i // 10 + 1}', flush=True)\n",
    )
    .expect("script");
    let py = python();
    let (out, run) = home.json(&[
        "run",
        "--json",
        "--no-instrument",
        "--",
        py.to_str().expect("utf-8"),
        script.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = &run["conditions"];
    assert!(c["samples"].as_u64().unwrap_or(0) >= 2, "{run}");
    energy_or_reason(c, true);
    // Each of its three epochs (a line at each one's start) has its own span, one after the
    // other, the last to the command's end.
    let epochs = run["epoch_conditions"]
        .as_array()
        .expect("epoch conditions");
    assert_eq!(epochs.len(), 3, "{run}");
    let secs: Vec<f64> = epochs
        .iter()
        .map(|e| e["seconds"].as_f64().unwrap_or(-1.0))
        .collect();
    assert!(
        secs.iter().all(|s| *s > 0.5 && *s < 3.0),
        "about a second each: {secs:?}"
    );
    // Read for people (without --json): the line says what was not read here.
    let out = home.run(&[
        "run",
        "--no-instrument",
        "--",
        py.to_str().expect("utf-8"),
        script.to_str().expect("utf-8"),
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    if c["energy_j"].is_null() {
        assert!(
            said.contains("headroom: not read on this machine: "),
            "{said}"
        );
    } else {
        assert!(said.contains("headroom: while timed: "), "{said}");
    }
}

#[test]
fn each_epoch_of_a_built_in_epochs_run_keeps_its_conditions() {
    let home = Home::new();
    let args = [
        "epochs",
        "--device",
        "cpu",
        "--workload",
        "mlp",
        "--batch",
        "16",
        "--epochs",
        "3",
        "--steps-per-epoch",
        "40",
        "--threads",
        "1",
    ];
    let (out, v) = home.json(&[&args[..], &["--json"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let epochs = v["epoch_conditions"].as_array().expect("per epoch");
    assert_eq!(epochs.len(), 3, "{v}");
    // Each from the end of the one before: they follow one another and sum to the run's span.
    let secs: Vec<f64> = epochs
        .iter()
        .map(|e| e["seconds"].as_f64().unwrap_or(-1.0))
        .collect();
    assert!(secs.iter().all(|s| *s >= 0.0), "{secs:?}");
    let whole = v["conditions"]["seconds"].as_f64().expect("the run's span");
    let sum: f64 = secs.iter().sum();
    assert!(
        (whole - sum).abs() < 0.05,
        "{whole} against {sum} ({secs:?})"
    );
    energy_or_reason(&v["conditions"], true);
    for e in epochs {
        // What this machine cannot read is said once, for the run.
        energy_or_reason(e, false);
        assert!(
            e["samples"].as_u64().unwrap_or(0) >= 2,
            "read at both ends: {e}"
        );
    }
    // Read for people: with energy, each epoch's line ends with its joules per sample.
    let out = home.run(&args);
    let said = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = said
        .lines()
        .filter(|l| l.trim_start().starts_with("epoch "))
        .collect();
    assert_eq!(lines.len(), 3, "{said}");
    let energy = !v["conditions"]["energy_j"].is_null();
    assert!(
        lines.iter().all(|l| l.ends_with("J/sample") == energy),
        "{said}"
    );
}

/// A user-script sweep's point is read over its timed steps, not to its process's end: a start
/// whose output stays open seconds after it was stopped (something it began still holds it, as
/// a CUDA process's teardown or a worker does) keeps none of that wait in its span, so its
/// joules per sample are its steps' own.
#[test]
fn a_user_sweeps_point_is_read_to_its_last_step_not_to_its_exit() {
    let home = Home::new();
    let script = home.path().join("slow_exit.py");
    std::fs::write(
        &script,
        "import argparse, subprocess, time\nimport torch\n\
         p = argparse.ArgumentParser(); p.add_argument('--batch-size', type=int, default=8)\n\
         b = p.parse_args().batch_size\n\
         # Something begun beside the loop holds its output for 4 s after the loop is gone.\n\
         subprocess.Popen(['sleep', '4'], start_new_session=True)\n\
         model = torch.nn.Linear(16, 4)\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
         for i in range(400):\n    \
             loss = model(torch.randn(b, 16)).square().mean()\n    \
             opt.zero_grad(); loss.backward(); opt.step()\n    \
             time.sleep(0.01)\n",
    )
    .expect("script");
    let (out, v) = run_python(
        &home,
        &["--sweep", "batch=auto", "--max-batch", "16"],
        &[script.to_str().expect("utf-8"), "--batch-size", "{batch}"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let points = v["sweep"]["points"].as_array().expect("points");
    assert!(!points.is_empty(), "{v}");
    for p in points {
        assert_eq!(p["status"], "ok", "{p}");
        let c = &p["conditions"];
        let secs = c["seconds"].as_f64().expect("its span");
        let steps = p["timed_steps"].as_f64().expect("timed steps");
        let timed = steps * p["step_ms_p50"].as_f64().expect("p50") / 1000.0;
        // From its first timed step to its last: about its timed steps' time, none of the
        // seconds its output stayed open after the stop (the exit read 1.9 s more here).
        assert!(
            secs > 0.0 && secs < timed + 0.6,
            "{secs} s against {timed} s: {c}"
        );
        assert!(c["samples"].as_u64().unwrap_or(0) >= 2, "{c}");
    }
}
