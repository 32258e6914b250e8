//! The sweep job the app runs (`headroom_core::jobs::sweep`) with the real worker: cancelling it
//! kills the worker at once and keeps the points it had finished, the run closed as interrupted.

use std::path::Path;
use std::time::Instant;

use headroom_core::jobs::sweep::{run_sweep, CancelToken, Update};
use headroom_model::budget::BudgetSpec;
use headroom_model::protocol::{BatchPlan, Dtype, Mode, SweepRequest};
use headroom_store::ledger::{Ledger, RunStatus};

#[test]
fn cancelling_a_sweep_kills_its_worker_and_keeps_its_points() {
    let dir = tempfile::tempdir().expect("dir");
    let ledger = Ledger::open(&dir.path().join("ledger.sqlite3")).expect("ledger");
    let req = SweepRequest {
        device: "cpu".into(),
        workload: "mlp".into(),
        input_shape: None,
        dtype: Dtype::F32,
        mode: Mode::Train,
        plan: BatchPlan::Search { start: 1, max: 512 },
        budget: BudgetSpec::parse("default").expect("budget"),
        steps: Some(5),
        threads: Some(1),
        predict: true,
        host_inputs: false,
        prior: Vec::new(),
    };
    let token = CancelToken::new("cancelled from the test");
    // Another thread cancels, as the app's Cancel button does, once the first point is in.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            if rx.recv().is_ok() {
                token.cancel();
                Instant::now()
            } else {
                Instant::now()
            }
        })
    };
    let mut pids = Vec::new();
    let mut sent = false;
    let out = run_sweep(
        Path::new(env!("CARGO_BIN_EXE_headroom")),
        &req,
        &ledger,
        &token,
        &mut |u| match u {
            Update::WorkerStarted { pid } => pids.push(*pid),
            Update::Point { .. } if !sent => {
                sent = true;
                let _ = tx.send(());
            }
            _ => {}
        },
    )
    .expect("the sweep ran");
    let cancelled_at = canceller.join().expect("canceller");
    let ended_in = cancelled_at.elapsed();
    assert_eq!(out.status, "interrupted", "{out:?}");
    let err = out.error.as_ref().expect("an error says why");
    assert_eq!(err.code, "cancelled");
    assert!(
        err.message.starts_with("cancelled from the test after "),
        "{}",
        err.message
    );
    // One or two points (the worker may finish the next one while the cancel is sent), never
    // the whole search up to 512.
    assert!(
        (1..=2).contains(&out.points.len()),
        "{} points",
        out.points.len()
    );
    assert!(ended_in.as_secs_f64() < 10.0, "took {ended_in:?} to stop");
    assert_eq!(pids.len(), 1, "no worker was restarted after the cancel");
    let (run, points) = ledger
        .get_run(out.run_id.expect("a run"))
        .expect("recorded");
    assert_eq!(run.status, RunStatus::Interrupted);
    assert_eq!(points.len(), out.points.len());
    assert!(run
        .note
        .is_some_and(|n| n.contains("cancelled from the test")));
    // The request is recorded as sent, and it asks nothing of the points for the energy's
    // sake: they are timed as they would be without it.
    let sent: serde_json::Value = serde_json::from_str(
        &ledger
            .request_json(out.run_id.expect("a run"))
            .expect("read")
            .expect("its request"),
    )
    .expect("json");
    assert_eq!(sent["workload"], "mlp", "{sent}");
    assert!(sent.get("energy").is_none(), "{sent}");
}
