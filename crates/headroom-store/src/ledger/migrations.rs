//! Embedded, ordered schema migrations. Migration `i` brings `user_version` from `i` to `i + 1`.

use std::path::Path;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::CoreError;

const MIGRATIONS: &[&str] = &[
    // 1: runs and their points.
    "CREATE TABLE runs (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        kind          TEXT NOT NULL,
        started_at    TEXT NOT NULL,
        finished_at   TEXT,
        status        TEXT NOT NULL,
        host          TEXT NOT NULL,
        device        TEXT NOT NULL,
        device_name   TEXT NOT NULL,
        workload      TEXT NOT NULL,
        dtype         TEXT NOT NULL,
        mode          TEXT NOT NULL,
        libtorch      TEXT NOT NULL,
        git_commit    TEXT,
        git_dirty     INTEGER,
        budget_bytes  INTEGER,
        chosen_batch  INTEGER,
        peak_bytes    INTEGER,
        fallback      INTEGER,
        request_json  TEXT NOT NULL,
        summary_json  TEXT,
        note          TEXT
    );
    CREATE TABLE points (
        run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,
        batch         INTEGER NOT NULL,
        status        TEXT NOT NULL,
        samples_per_s REAL,
        step_ms_p50   REAL,
        step_ms_p95   REAL,
        peak_bytes    INTEGER,
        point_json    TEXT NOT NULL,
        recorded_at   TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    CREATE INDEX runs_started ON runs(started_at);",
    // 2: the process that owns a running run, so a run whose owner died can be closed.
    "ALTER TABLE runs ADD COLUMN owner_pid INTEGER;",
    // 3: samples of runs that are not sweeps (an epoch's memory, a watched process' reading).
    "CREATE TABLE samples (
        run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq         INTEGER NOT NULL,
        kind        TEXT NOT NULL,
        sample_json TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );",
    // 4: checksums of dataset files, reused while a file's size and mtime are unchanged.
    "CREATE TABLE data_checksums (
        path     TEXT PRIMARY KEY,
        bytes    INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        sha256   TEXT NOT NULL
    );",
];

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub(super) fn migrate(conn: &Connection, path: &Path) -> Result<(), CoreError> {
    let err = |source| CoreError::Ledger {
        path: path.display().to_string(),
        source,
    };
    // Two processes may open a fresh ledger at once (a sweep starting while `ledger list` runs).
    // The version is read and the migrations applied under one write lock, so the second waits
    // (busy timeout) and then finds the schema already there instead of creating it twice.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(err)?;
    let found: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(err)?;
    if found > SCHEMA_VERSION {
        return Err(CoreError::LedgerTooNew {
            path: path.display().to_string(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    for sql in MIGRATIONS.iter().skip(usize::try_from(found).unwrap_or(0)) {
        tx.execute_batch(sql).map_err(err)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(err)?;
    tx.commit().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_ledger_is_upgraded_in_place() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ledger.sqlite3");
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(MIGRATIONS[0]).expect("v1 schema");
        conn.pragma_update(None, "user_version", 1)
            .expect("version");
        conn.execute(
            "INSERT INTO runs (kind, started_at, status, host, device, device_name, workload, dtype, mode,
                libtorch, request_json) VALUES ('sweep', 't', 'complete', 'h', 'cpu', 'c', 'mlp', 'f32',
                'train', '2.11.0', '{}')",
            [],
        )
        .expect("a v1 run");
        migrate(&conn, &path).expect("migrate");
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(version, SCHEMA_VERSION);
        let (workload, owner): (String, Option<i64>) = conn
            .query_row("SELECT workload, owner_pid FROM runs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("the run survived");
        assert_eq!((workload.as_str(), owner), ("mlp", None));
    }
}
