//! Reading runs and points back.

use rusqlite::{params, OptionalExtension, Row};

use super::{Ledger, RunKind, RunRecord, RunStatus};
use crate::CoreError;
use headroom_model::protocol::Point;

const RUN_COLUMNS: &str = "r.id, r.kind, r.started_at, r.finished_at, r.status, r.host, r.device,
    r.device_name, r.workload, r.dtype, r.mode, r.libtorch, r.git_commit, r.git_dirty,
    r.budget_bytes, r.chosen_batch, r.peak_bytes, r.fallback, r.summary_json, r.note,
    (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id)";

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<(RunRecord, Option<String>)> {
    let u = |v: Option<i64>| v.and_then(|x| u64::try_from(x).ok());
    let status: String = row.get(4)?;
    let kind: String = row.get(1)?;
    let record = RunRecord {
        id: row.get(0)?,
        kind: RunKind::parse(&kind),
        started_at: row.get(2)?,
        finished_at: row.get(3)?,
        status: RunStatus::parse(&status),
        host: row.get(5)?,
        device: row.get(6)?,
        device_name: row.get(7)?,
        workload: row.get(8)?,
        dtype: headroom_model::protocol::Dtype::parse(&row.get::<_, String>(9)?).ok(),
        mode: headroom_model::protocol::Mode::parse(&row.get::<_, String>(10)?).ok(),
        libtorch: row.get(11)?,
        git_commit: row.get(12)?,
        git_dirty: row.get(13)?,
        budget_bytes: u(row.get(14)?),
        chosen_batch: row.get(15)?,
        peak_bytes: u(row.get(16)?),
        fallback: row.get(17)?,
        summary: None,
        report: None,
        note: row.get(19)?,
        points: row.get(20)?,
    };
    Ok((record, row.get(18)?))
}

fn with_summary((mut record, json): (RunRecord, Option<String>)) -> Result<RunRecord, CoreError> {
    // A sweep's summary has a type; other kinds (doctor, …) keep their report as JSON.
    if record.kind == RunKind::Sweep {
        record.summary = json.map(|j| serde_json::from_str(&j)).transpose()?;
    } else {
        record.report = json.map(|j| serde_json::from_str(&j)).transpose()?;
    }
    Ok(record)
}

impl Ledger {
    /// The processes recording runs still `running` on `host`: the training Headroom knows of.
    pub fn running_owners(&self, host: &str) -> Result<Vec<u32>, CoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT owner_pid FROM runs WHERE status = 'running' AND host = ?1 AND owner_pid IS NOT NULL")
            .map_err(|e| self.err(e))?;
        let pids = stmt
            .query_map(params![host], |r| r.get::<_, u32>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(pids)
    }

    /// The request run `id` was started with, as recorded (JSON), if any.
    pub fn request_json(&self, id: i64) -> Result<Option<String>, CoreError> {
        self.conn
            .query_row(
                "SELECT request_json FROM runs WHERE id = ?1",
                params![id],
                |r| r.get::<_, Option<String>>(0),
            )
            .map_err(|e| self.err(e))
    }

    /// The newest `limit` runs, newest first.
    pub fn list_runs(&self, limit: u32) -> Result<Vec<RunRecord>, CoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs r ORDER BY r.id DESC LIMIT ?1");
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![limit], run_from_row)
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        rows.into_iter().map(with_summary).collect()
    }

    /// One run and its points in the order they were recorded.
    pub fn get_run(&self, id: i64) -> Result<(RunRecord, Vec<Point>), CoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = ?1");
        let row = self
            .conn
            .query_row(&sql, params![id], run_from_row)
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or(CoreError::NoSuchRun(id))?;
        let record = with_summary(row)?;
        let mut stmt = self
            .conn
            .prepare("SELECT point_json FROM points WHERE run_id = ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let jsons = stmt
            .query_map(params![id], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        let points = jsons
            .iter()
            .map(|j| serde_json::from_str(j))
            .collect::<Result<_, _>>()?;
        Ok((record, points))
    }

    /// The samples of kind `kind` of run `id`, in order, as `T`.
    pub fn samples<T: serde::de::DeserializeOwned>(
        &self,
        id: i64,
        kind: &str,
    ) -> Result<Vec<T>, CoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT sample_json FROM samples WHERE run_id = ?1 AND kind = ?2 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let jsons = stmt
            .query_map(params![id, kind], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        jsons
            .iter()
            .map(|j| serde_json::from_str(j).map_err(CoreError::from))
            .collect()
    }
}
