//! Writing runs and points.

use rusqlite::params;

use super::{Ledger, NewRun, RunStatus};
use crate::protocol::{Point, SweepSummary};
use crate::time::now_rfc3339;
use crate::CoreError;

fn opt_i64(v: Option<u64>) -> Option<i64> {
    v.and_then(|x| i64::try_from(x).ok())
}

impl Ledger {
    /// Records the start of a run and returns its id.
    pub fn begin_run(&self, run: &NewRun) -> Result<i64, CoreError> {
        self.conn
            .execute(
                "INSERT INTO runs (kind, started_at, status, host, device, device_name, workload, dtype,
                    mode, libtorch, git_commit, git_dirty, budget_bytes, fallback, request_json, owner_pid)
                 VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    run.kind.as_str(),
                    now_rfc3339(),
                    run.host,
                    run.device,
                    run.device_name,
                    run.workload,
                    super::stored_name(run.dtype.map(crate::protocol::Dtype::as_str)),
                    super::stored_name(run.mode.map(crate::protocol::Mode::as_str)),
                    run.libtorch,
                    run.git_commit,
                    run.git_dirty,
                    opt_i64(run.budget_bytes),
                    run.fallback,
                    run.request_json,
                    run.owner_pid,
                ],
            )
            .map_err(|e| self.err(e))?;
        let id = self.conn.last_insert_rowid();
        // The quiet facts that explain a figure weeks later: power, battery, Low Power Mode,
        // thermal state at the run's start (unknown where the OS does not say), the apps holding
        // memory, the Python. Only for this machine's runs: a run recorded here from another
        // machine's output (a remote check, the migration's run there) did not meet them.
        if run.host == crate::jobs::hostname() {
            self.add_sample(
                id,
                super::CONDITIONS_SEQ,
                "conditions",
                &crate::readiness::system::conditions(),
            )?;
            self.add_sample(id, super::CONDITIONS_SEQ + 1, "context", &self.context())?;
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
        self.conn
            .execute(
                "INSERT INTO data_checksums (path, bytes, mtime_ns, sha256) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(path) DO UPDATE SET bytes = ?2, mtime_ns = ?3, sha256 = ?4",
                params![path, opt_i64(Some(bytes)), mtime_ns, sha256],
            )
            .map_err(|e| self.err(e))?;
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

    /// Where the ledger lives and who holds memory, at a run's start.
    fn context(&self) -> super::RunContext {
        let cfg = crate::config::load()
            .map(|c| c.contention)
            .unwrap_or_default();
        let report = crate::contention::Sampler::new().sample(&cfg, &[], None);
        let apps = report
            .groups
            .iter()
            .filter(|g| {
                use crate::contention::Group;
                matches!(
                    g.group,
                    Group::Conferencing | Group::Ide | Group::Browser | Group::LocalLlm
                )
            })
            .map(|g| super::AppsHeld {
                group: g.group.label().to_owned(),
                bytes: g.bytes,
                apps: g.apps.iter().take(3).map(|a| a.name.clone()).collect(),
            })
            .collect();
        super::RunContext {
            data_mount: crate::mounts::mount_of(self.path()),
            apps,
            python: crate::readiness::python::users_torch(std::time::Duration::from_secs(10)),
        }
    }

    /// Stores one point of run `run_id`; `seq` orders the points of a run. A point stored again
    /// at the same `seq` replaces it (a batch measured again).
    pub fn add_point(&self, run_id: i64, seq: u32, point: &Point) -> Result<(), CoreError> {
        let json = serde_json::to_string(point)?;
        self.conn
            .execute(
                "INSERT OR REPLACE INTO points (run_id, seq, batch, status, samples_per_s, step_ms_p50, step_ms_p95,
                    peak_bytes, point_json, recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    run_id,
                    seq,
                    point.batch,
                    point.status.as_str(),
                    point.samples_per_s,
                    point.step_ms_p50,
                    point.step_ms_p95,
                    opt_i64(point.peak_bytes),
                    json,
                    now_rfc3339(),
                ],
            )
            .map_err(|e| self.err(e))?;
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
        self.conn
            .execute(
                "INSERT INTO samples (run_id, seq, kind, sample_json, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run_id, seq, kind, json, now_rfc3339()],
            )
            .map_err(|e| self.err(e))?;
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
            .prepare("SELECT id, owner_pid FROM runs WHERE status = 'running' AND host = ?1 AND owner_pid IS NOT NULL")
            .map_err(|e| self.err(e))?;
        let running = stmt
            .query_map(params![host], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, u32>(1)?))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        let mut closed = 0;
        for (id, pid) in running.into_iter().filter(|(_, pid)| !alive(*pid)) {
            let note = format!(
                "the headroom process that ran it (pid {pid}) ended without closing the run"
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
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, finished_at = ?3, summary_json = ?4, note = ?5 WHERE id = ?1",
                params![run_id, status.as_str(), now_rfc3339(), json, note],
            )
            .map_err(|e| self.err(e))?;
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
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, finished_at = ?3, summary_json = ?4, chosen_batch = ?5,
                    peak_bytes = ?6, fallback = ?7, note = ?8 WHERE id = ?1",
                params![
                    run_id,
                    status.as_str(),
                    now_rfc3339(),
                    json,
                    batch,
                    opt_i64(Some(peak_bytes)),
                    fallback,
                    note
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Sets the device of run `run_id`, learnt while it ran (a script sweep's, from the observer).
    pub fn set_device(&self, run_id: i64, device: &str) -> Result<(), CoreError> {
        self.conn
            .execute(
                "UPDATE runs SET device = ?2 WHERE id = ?1",
                params![run_id, device],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Sets the status of run `run_id` and its note, once a caller knows better than the run
    /// itself (a sweep's start that exited cleanly but gave nothing to time has failed).
    pub fn set_status(&self, run_id: i64, status: RunStatus, note: &str) -> Result<(), CoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, note = ?3 WHERE id = ?1",
                params![run_id, status.as_str(), note],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Sets the budget of run `run_id`, once the device's size is known.
    pub fn set_budget(&self, run_id: i64, budget: u64) -> Result<(), CoreError> {
        self.conn
            .execute(
                "UPDATE runs SET budget_bytes = ?2 WHERE id = ?1",
                params![run_id, opt_i64(Some(budget))],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Sets the libtorch (torch) version of run `run_id`, learnt while it ran.
    pub fn set_libtorch(&self, run_id: i64, version: &str) -> Result<(), CoreError> {
        self.conn
            .execute(
                "UPDATE runs SET libtorch = ?2 WHERE id = ?1",
                params![run_id, version],
            )
            .map_err(|e| self.err(e))?;
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
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, finished_at = ?3, summary_json = ?4, chosen_batch = ?5,
                    peak_bytes = ?6, note = ?7 WHERE id = ?1",
                params![
                    run_id,
                    status.as_str(),
                    now_rfc3339(),
                    json,
                    summary.and_then(|s| s.recommended_batch),
                    opt_i64(summary.and_then(|s| s.peak_bytes_at_recommended)),
                    note,
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}
