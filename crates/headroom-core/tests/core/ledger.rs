//! The ledger against a real SQLite file in a temp dir.

use headroom_model::planner::Limit;
use headroom_model::protocol::{Point, PointStatus};
use headroom_model::summary::summarize;
use headroom_store::ledger::{Ledger, NewRun, RunStatus, SCHEMA_VERSION};
use headroom_store::CoreError;

fn new_run() -> NewRun {
    NewRun {
        kind: headroom_store::ledger::RunKind::Sweep,
        host: "testhost".into(),
        device: "cpu".into(),
        device_name: "test cpu".into(),
        workload: "mlp".into(),
        dtype: Some(headroom_model::protocol::Dtype::F32),
        mode: Some(headroom_model::protocol::Mode::Train),
        libtorch: "2.11.0".into(),
        git_commit: Some("abc".into()),
        git_dirty: Some(true),
        budget_bytes: Some(1 << 30),
        fallback: Some(false),
        request_json: "{}".into(),
        owner_pid: None,
    }
}

pub fn ok_point(batch: u32, sps: f64, peak: u64) -> Point {
    let mut p = Point::failed(batch, PointStatus::Ok, "");
    p.message = None;
    p.samples_per_s = Some(sps);
    p.peak_bytes = Some(peak);
    p
}

#[test]
fn ledger_round_trips_runs_and_points() -> Result<(), CoreError> {
    let dir = tempfile::tempdir().map_err(|e| CoreError::InvalidInput(e.to_string()))?;
    let path = dir.path().join("sub/ledger.sqlite3");
    let ledger = Ledger::open(&path)?;
    let id = ledger.begin_run(&new_run())?;
    let pts = [
        ok_point(1, 10.0, 100),
        ok_point(2, 19.0, 150),
        Point::failed(4, PointStatus::Oom, "oom"),
    ];
    for (i, p) in pts.iter().enumerate() {
        ledger.add_point(id, u32::try_from(i).unwrap_or(0), p)?;
    }
    // Points are there before the run is finished (a worker may die at any moment).
    let (rec, got) = ledger.get_run(id)?;
    assert_eq!(rec.status, RunStatus::Running);
    assert_eq!(got, pts.to_vec());
    let summary = summarize(&pts, Limit::Oom, 1 << 30);
    ledger.finish_run(id, RunStatus::Complete, Some(&summary), None)?;
    drop(ledger);

    let reopened = Ledger::open(&path)?;
    let runs = reopened.list_runs(10)?;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Complete);
    assert_eq!(runs[0].points, 3);
    assert_eq!(runs[0].chosen_batch, summary.recommended_batch);
    assert_eq!(runs[0].summary.as_ref(), Some(&summary));
    assert_eq!(runs[0].git_dirty, Some(true));
    assert!(matches!(
        reopened.get_run(id + 1),
        Err(CoreError::NoSuchRun(_))
    ));
    Ok(())
}

#[test]
fn a_newer_ledger_is_refused_with_a_clear_error() -> Result<(), CoreError> {
    let dir = tempfile::tempdir().map_err(|e| CoreError::InvalidInput(e.to_string()))?;
    let path = dir.path().join("ledger.sqlite3");
    drop(Ledger::open(&path)?);
    let conn =
        rusqlite::Connection::open(&path).map_err(|e| CoreError::InvalidInput(e.to_string()))?;
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 5)
        .map_err(|e| CoreError::InvalidInput(e.to_string()))?;
    drop(conn);
    let err = Ledger::open(&path)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("upgrade headroom"), "{err}");
    Ok(())
}

#[test]
fn a_file_that_is_not_sqlite_is_an_error() {
    let dir = tempfile::tempdir().ok();
    let Some(dir) = dir else { return };
    let path = dir.path().join("ledger.sqlite3");
    let _ = std::fs::write(
        &path,
        b"this is not a database, it is a text file of some length....",
    );
    let err = Ledger::open(&path)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("ledger.sqlite3"), "{err}");
}

#[test]
fn runs_whose_owner_died_are_closed_as_interrupted() -> Result<(), CoreError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = Ledger::open(&dir.path().join("ledger.sqlite3"))?;
    let mut run = new_run();
    run.owner_pid = Some(4_000_001);
    let dead = ledger.begin_run(&run)?;
    ledger.add_point(dead, 0, &ok_point(1, 5.0, 10))?;
    run.owner_pid = Some(4_000_002);
    let alive = ledger.begin_run(&run)?;
    run.host = "elsewhere".into();
    run.owner_pid = Some(4_000_001);
    let other_host = ledger.begin_run(&run)?;

    let closed = ledger.close_orphans("testhost", |pid| pid == 4_000_002)?;
    assert_eq!(closed, 1);
    let (rec, points) = ledger.get_run(dead)?;
    assert_eq!(rec.status, RunStatus::Interrupted);
    assert!(rec.note.unwrap_or_default().contains("pid 4000001"));
    assert_eq!(points.len(), 1, "its points stay");
    assert_eq!(ledger.get_run(alive)?.0.status, RunStatus::Running);
    assert_eq!(
        ledger.get_run(other_host)?.0.status,
        RunStatus::Running,
        "another host's runs are not ours to judge"
    );
    Ok(())
}

#[test]
fn many_openers_of_a_fresh_ledger_all_succeed() {
    // A sweep creating the ledger while `ledger list` opens it once raced to "table runs already
    // exists" (CI stop 13). Openers now migrate under one write lock.
    for _ in 0..10 {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ledger.sqlite3");
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || Ledger::open(&path).map(|_| ()))
            })
            .collect();
        for h in handles {
            h.join()
                .expect("thread")
                .expect("every opener gets a usable ledger");
        }
        let ledger = Ledger::open(&path).expect("reopen");
        assert!(ledger.list_runs(10).expect("runs").is_empty());
    }
}

#[test]
fn budgets_within_five_percent_are_not_a_difference_but_a_third_apart_are() -> Result<(), CoreError>
{
    let dir = tempfile::tempdir().map_err(|e| CoreError::InvalidInput(e.to_string()))?;
    let ledger = Ledger::open(&dir.path().join("ledger.sqlite3"))?;
    let gib = 1u64 << 30;
    let run = |budget: u64| -> Result<i64, CoreError> {
        let id = ledger.begin_run(&NewRun {
            budget_bytes: Some(budget),
            ..new_run()
        })?;
        ledger.add_point(id, 0, &ok_point(8, 100.0, 1 << 20))?;
        ledger.finish_run(id, RunStatus::Complete, None, None)?;
        Ok(id)
    };
    let (a, close, far) = (run(20 * gib)?, run(20 * gib - gib / 5)?, run(14 * gib)?);
    let facts = |x, y| -> Result<Vec<String>, CoreError> {
        Ok(headroom_report::report::compare(&ledger, x, y)?
            .into_iter()
            .filter(|l| l.contains("budget"))
            .collect())
    };
    assert_eq!(
        facts(a, close)?,
        Vec::<String>::new(),
        "19.8 GiB against 20 GiB"
    );
    assert_eq!(
        facts(a, far)?,
        vec!["  budget: 20.0 GiB vs 14.0 GiB".to_owned()]
    );
    Ok(())
}
