//! Writing runs and points.

use rusqlite::params;

use super::keep::{Op, Stmt};
use super::{Ledger, NewRun, RunStatus};
use crate::CoreError;
use headroom_model::protocol::{Point, SweepSummary};
use headroom_model::time::now_rfc3339;

fn opt_i64(v: Option<u64>) -> Option<i64> {
    v.and_then(|x| i64::try_from(x).ok())
}

impl Ledger {
    /// Records the start of a run and returns its id.
    pub fn begin_run(&self, run: &NewRun) -> Result<i64, CoreError> {
        let id = self.write(Op::new(
            Stmt::BeginRun,
            vec![
                run.kind.as_str().into(),
                now_rfc3339().into(),
                (&run.host).into(),
                (&run.device).into(),
                (&run.device_name).into(),
                (&run.workload).into(),
                super::stored_name(run.dtype.map(headroom_model::protocol::Dtype::as_str)).into(),
                super::stored_name(run.mode.map(headroom_model::protocol::Mode::as_str)).into(),
                (&run.libtorch).into(),
                run.git_commit.as_deref().into(),
                run.git_dirty.into(),
                opt_i64(run.budget_bytes).into(),
                run.fallback.into(),
                (&run.request_json).into(),
                run.owner_pid.into(),
            ],
        ))?;
        // What the opener gives every run at its start (the machine's conditions, the apps
        // holding memory: see `jobs::run_start_samples`); the ledger only stores them.
        if let Some(start) = self.start_samples.get() {
            for (seq, kind, value) in start(run, &self.path) {
                self.add_sample(id, seq, &kind, &value)?;
            }
        }
        for (seq, kind, value) in self.attached.borrow().iter() {
            self.add_sample(id, *seq, kind, value)?;
        }
        Ok(id)
    }

    /// Makes every run begun from now on through this handle record `value` as its sample `kind`
    /// at `seq` (the facts gathered before a job starts: dataset checksums, the artifact store's
    /// round trip), so they are in the ledger from the run's first moment.
    pub fn attach<T: serde::Serialize>(
        &self,
        seq: u32,
        kind: &str,
        value: &T,
    ) -> Result<(), CoreError> {
        let value = serde_json::to_value(value)?;
        let mut list = self.attached.borrow_mut();
        list.retain(|(s, _, _)| *s != seq);
        list.push((seq, kind.to_owned(), value));
        Ok(())
    }

    /// Remembers the checksum of the file at `path` with its size and mtime.
    pub fn cache_checksum(
        &self,
        path: &str,
        bytes: u64,
        mtime_ns: i64,
        sha256: &str,
    ) -> Result<(), CoreError> {
        self.write(Op::new(
            Stmt::CacheChecksum,
            vec![
                path.into(),
                opt_i64(Some(bytes)).into(),
                mtime_ns.into(),
                sha256.into(),
            ],
        ))?;
        Ok(())
    }

    /// The checksum remembered for `path` when its size and mtime are still these.
    pub fn cached_checksum(
        &self,
        path: &str,
        bytes: u64,
        mtime_ns: i64,
    ) -> Result<Option<String>, CoreError> {
        use rusqlite::OptionalExtension;
        self.conn
            .query_row(
                "SELECT sha256 FROM data_checksums WHERE path = ?1 AND bytes = ?2 AND mtime_ns = ?3",
                params![path, opt_i64(Some(bytes)), mtime_ns],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Stores one point of run `run_id`; `seq` orders the points of a run. A point stored again
    /// at the same `seq` replaces it (a batch measured again).
    pub fn add_point(&self, run_id: i64, seq: u32, point: &Point) -> Result<(), CoreError> {
        let json = serde_json::to_string(point)?;
        self.write(Op::new(
            Stmt::AddPoint,
            vec![
                run_id.into(),
                seq.into(),
                point.batch.into(),
                point.status.as_str().into(),
                point.samples_per_s.into(),
                point.step_ms_p50.into(),
                point.step_ms_p95.into(),
                opt_i64(point.peak_bytes).into(),
                json.into(),
                now_rfc3339().into(),
            ],
        ))?;
        Ok(())
    }

    /// Stores sample `seq` of run `run_id` (an epoch, a reading), as JSON of kind `kind`.
    pub fn add_sample<T: serde::Serialize>(
        &self,
        run_id: i64,
        seq: u32,
        kind: &str,
        sample: &T,
    ) -> Result<(), CoreError> {
        let json = serde_json::to_string(sample)?;
        self.write(Op::new(
            Stmt::AddSample,
            vec![
                run_id.into(),
                seq.into(),
                kind.into(),
                json.into(),
                now_rfc3339().into(),
            ],
        ))?;
        Ok(())
    }

    /// Marks as interrupted every run still `running` on `host` whose owner process is gone
    /// (`alive` says whether a pid lives); their points stay. Returns how many were closed.
    pub fn close_orphans(
        &self,
        host: &str,
        alive: impl Fn(u32) -> bool,
    ) -> Result<usize, CoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, owner_pid, kind FROM runs WHERE status = 'running' AND host = ?1 AND owner_pid IS NOT NULL")
            .map_err(|e| self.err(e))?;
        let running = stmt
            .query_map(params![host], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        let mut closed = 0;
        for (id, pid, kind) in running.into_iter().filter(|(_, pid, _)| !alive(*pid)) {
            // A wrapped command is not Headroom's child to stop: it may well have gone on.
            let wrapped = if kind == "run" || kind == "watch" {
                "; the command it watched may have run on unwatched, and how it ended is not known"
            } else {
                ""
            };
            let note = format!(
                "the headroom process that ran it (pid {pid}) ended without closing the run{wrapped}"
            );
            closed += self
                .conn
                .execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ?2, note = ?3
                     WHERE id = ?1 AND status = 'running'",
                    params![id, now_rfc3339(), note],
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(closed)
    }

    /// Closes a run that is not a sweep (e.g. `doctor`) with its whole report as JSON.
    pub fn finish_report(
        &self,
        run_id: i64,
        status: RunStatus,
        report: &serde_json::Value,
        note: Option<&str>,
    ) -> Result<(), CoreError> {
        let json = serde_json::to_string(report)?;
        self.write(Op::new(
            Stmt::FinishReport,
            vec![
                run_id.into(),
                status.as_str().into(),
                now_rfc3339().into(),
                json.into(),
                note.into(),
            ],
        ))?;
        Ok(())
    }

    /// Closes a `run`/`watch` run with its report and the fields a result needs.
    #[allow(clippy::too_many_arguments)]
    pub fn finish_watch<T: serde::Serialize>(
        &self,
        run_id: i64,
        status: RunStatus,
        report: &T,
        batch: Option<u32>,
        peak_bytes: u64,
        fallback: bool,
        note: &str,
    ) -> Result<(), CoreError> {
        let json = serde_json::to_string(report)?;
        self.write(Op::new(
            Stmt::FinishWatch,
            vec![
                run_id.into(),
                status.as_str().into(),
                now_rfc3339().into(),
                json.into(),
                batch.into(),
                opt_i64(Some(peak_bytes)).into(),
                fallback.into(),
                note.into(),
            ],
        ))?;
        Ok(())
    }

    /// Sets the device of run `run_id`, learnt while it ran (a script sweep's, from the observer).
    pub fn set_device(&self, run_id: i64, device: &str) -> Result<(), CoreError> {
        self.write(Op::new(Stmt::SetDevice, vec![run_id.into(), device.into()]))?;
        Ok(())
    }

    /// Sets the status of run `run_id` and its note, once a caller knows better than the run
    /// itself (a sweep's start that exited cleanly but gave nothing to time has failed).
    pub fn set_status(&self, run_id: i64, status: RunStatus, note: &str) -> Result<(), CoreError> {
        self.write(Op::new(
            Stmt::SetStatus,
            vec![run_id.into(), status.as_str().into(), note.into()],
        ))?;
        Ok(())
    }

    /// Sets the budget of run `run_id`, once the device's size is known.
    pub fn set_budget(&self, run_id: i64, budget: u64) -> Result<(), CoreError> {
        self.write(Op::new(
            Stmt::SetBudget,
            vec![run_id.into(), opt_i64(Some(budget)).into()],
        ))?;
        Ok(())
    }

    /// Sets the libtorch (torch) version of run `run_id`, learnt while it ran.
    pub fn set_libtorch(&self, run_id: i64, version: &str) -> Result<(), CoreError> {
        self.write(Op::new(
            Stmt::SetLibtorch,
            vec![run_id.into(), version.into()],
        ))?;
        Ok(())
    }

    /// Records run `run_id`'s batch where the run has one from its start (a numerics, profile
    /// or epochs job at the batch it was given).
    pub fn set_batch(&self, run_id: i64, batch: u32) -> Result<(), CoreError> {
        self.write(Op::new(Stmt::SetBatch, vec![run_id.into(), batch.into()]))?;
        Ok(())
    }

    /// Closes run `run_id` with `status`, its summary (if any) and a note (e.g. why it stopped).
    pub fn finish_run(
        &self,
        run_id: i64,
        status: RunStatus,
        summary: Option<&SweepSummary>,
        note: Option<&str>,
    ) -> Result<(), CoreError> {
        let json = summary.map(serde_json::to_string).transpose()?;
        self.write(Op::new(
            Stmt::FinishRun,
            vec![
                run_id.into(),
                status.as_str().into(),
                now_rfc3339().into(),
                json.into(),
                summary.and_then(|s| s.recommended_batch).into(),
                opt_i64(summary.and_then(|s| s.peak_bytes_at_recommended)).into(),
                note.into(),
            ],
        ))?;
        Ok(())
    }
}
