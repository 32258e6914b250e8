//! Keeping a run's records when the ledger cannot take them.
//!
//! A wrapped training must never end because Headroom could not write: another process holding
//! the ledger's lock, a full disk or a read-only folder is Headroom's problem. Every write goes
//! through [`Ledger::write`] as an [`Op`] (a named statement and its values, taken at the moment
//! it happened). A handle that [keeps going](Ledger::keep_going) queues an op the ledger refuses
//! for a reason that may pass, retries at the next write (at most once a second), and at its end
//! ([`Ledger::settle`]) waits a few seconds more, then writes what is still queued to a spill file
//! beside the ledger (`ledger.sqlite3.spill-PID-NANOS.jsonl`), which the next [`Ledger::open`]
//! replays in one transaction. A run begun while the ledger refused gets a provisional negative
//! id; its later records refer to it and are mapped to the real id when the run's row is written.
//! The queue is bounded ([`KEEP_BYTES`]): past it, memory readings (the most numerous records,
//! and the least needed) are counted and dropped; everything else is kept.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::types::{ToSql, ToSqlOutput};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::Ledger;
use crate::CoreError;

/// The most bytes of values one handle keeps queued.
pub const KEEP_BYTES: usize = 32 << 20;

/// How long one write waits for another process' lock while a handle keeps going (the
/// training's output is not read meanwhile).
const KEEP_BUSY: Duration = Duration::from_millis(250);

/// How long [`Ledger::settle`] waits for the ledger before spilling.
const SETTLE_WAIT: Duration = Duration::from_secs(5);

/// Between two retries of a refused write.
const RETRY: Duration = Duration::from_secs(1);

/// The statements Headroom writes, by name (a spill file names them; their SQL lives here only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Stmt {
    BeginRun,
    AddPoint,
    AddSample,
    FinishReport,
    FinishWatch,
    FinishRun,
    SetDevice,
    SetStatus,
    SetBudget,
    SetLibtorch,
    SetBatch,
    CacheChecksum,
}

impl Stmt {
    fn sql(self) -> &'static str {
        match self {
            Self::BeginRun => {
                "INSERT INTO runs (kind, started_at, status, host, device, device_name, workload, dtype,
                    mode, libtorch, git_commit, git_dirty, budget_bytes, fallback, request_json, owner_pid)
                 VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
            }
            Self::AddPoint => {
                "INSERT OR REPLACE INTO points (run_id, seq, batch, status, samples_per_s, step_ms_p50,
                    step_ms_p95, peak_bytes, point_json, recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
            }
            Self::AddSample => {
                "INSERT OR REPLACE INTO samples (run_id, seq, kind, sample_json, recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)"
            }
            Self::FinishReport => {
                "UPDATE runs SET status = ?2, finished_at = ?3, summary_json = ?4, note = ?5 WHERE id = ?1"
            }
            Self::FinishWatch => {
                "UPDATE runs SET status = ?2, finished_at = ?3, summary_json = ?4, chosen_batch = ?5,
                    peak_bytes = ?6, fallback = ?7, note = ?8 WHERE id = ?1"
            }
            Self::FinishRun => {
                "UPDATE runs SET status = ?2, finished_at = ?3, summary_json = ?4, chosen_batch = ?5,
                    peak_bytes = ?6, note = ?7 WHERE id = ?1"
            }
            Self::SetDevice => "UPDATE runs SET device = ?2 WHERE id = ?1",
            Self::SetStatus => "UPDATE runs SET status = ?2, note = ?3 WHERE id = ?1",
            Self::SetBudget => "UPDATE runs SET budget_bytes = ?2 WHERE id = ?1",
            Self::SetLibtorch => "UPDATE runs SET libtorch = ?2 WHERE id = ?1",
            Self::SetBatch => "UPDATE runs SET chosen_batch = ?2 WHERE id = ?1",
            Self::CacheChecksum => {
                "INSERT INTO data_checksums (path, bytes, mtime_ns, sha256) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(path) DO UPDATE SET bytes = ?2, mtime_ns = ?3, sha256 = ?4"
            }
        }
    }

    /// Whether its first value is a run's id.
    fn names_a_run(self) -> bool {
        !matches!(self, Self::BeginRun | Self::CacheChecksum)
    }
}

/// One value of a statement, as SQLite stores it (and a spill file writes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum Val {
    Int(i64),
    Real(f64),
    Text(String),
    Null,
}

impl ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Self::Int(v) => ToSqlOutput::from(*v),
            Self::Real(v) => ToSqlOutput::from(*v),
            Self::Text(v) => ToSqlOutput::from(v.as_str()),
            Self::Null => ToSqlOutput::from(rusqlite::types::Null),
        })
    }
}

impl Val {
    fn bytes(&self) -> usize {
        match self {
            Self::Text(t) => t.len() + 24,
            _ => 24,
        }
    }
}

impl From<i64> for Val {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Self {
        Self::Int(i64::from(v))
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Self {
        Self::Int(i64::from(v))
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Self {
        Self::Real(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Self {
        Self::Text(v.clone())
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

/// One write, with its values as they were when it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Op {
    stmt: Stmt,
    values: Vec<Val>,
    /// The provisional id a [`Stmt::BeginRun`] stands for until its row is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    creates: Option<i64>,
}

impl Op {
    pub(super) fn new(stmt: Stmt, values: Vec<Val>) -> Self {
        Self {
            stmt,
            values,
            creates: None,
        }
    }

    fn bytes(&self) -> usize {
        self.values.iter().map(Val::bytes).sum::<usize>() + 32
    }

    /// A memory reading: dropped first when the queue is full.
    fn droppable(&self) -> bool {
        self.stmt == Stmt::AddSample && self.values.get(2) == Some(&Val::Text("memory".into()))
    }

    /// Runs it on `conn`, its run's provisional id mapped through `ids`; the new row's id.
    fn exec(&self, conn: &Connection, ids: &HashMap<i64, i64>) -> rusqlite::Result<i64> {
        let mut values = self.values.clone();
        if self.stmt.names_a_run() {
            if let Some(Val::Int(id)) = values.first_mut() {
                if *id < 0 {
                    *id = *ids.get(id).ok_or_else(|| {
                        rusqlite::Error::InvalidParameterName(
                            "its run was never recorded (the run's own record was lost)".into(),
                        )
                    })?;
                }
            }
        }
        conn.execute(self.stmt.sql(), rusqlite::params_from_iter(values.iter()))?;
        Ok(conn.last_insert_rowid())
    }
}

/// Whether the ledger may take a write it refused now, later (a lock, a full disk, a folder
/// made read-only for a while).
fn may_pass(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode as C;
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _) if matches!(
            f.code,
            C::DatabaseBusy
                | C::DatabaseLocked
                | C::DiskFull
                | C::SystemIoFailure
                | C::ReadOnly
                | C::CannotOpen
                | C::PermissionDenied
        )
    )
}

/// What a handle that keeps going has kept, written late, dropped or lost.
#[derive(Debug, Default)]
pub(super) struct Keep {
    on: bool,
    /// Print on stderr what happens to the records (the CLI; the app logs nothing here).
    tell: bool,
    /// The ledger could not be opened at all: every op waits for [`Ledger::settle`].
    detached: Option<String>,
    pending: VecDeque<Op>,
    bytes: usize,
    next_provisional: i64,
    ids: HashMap<i64, i64>,
    /// Why the first op now waiting was refused, and when.
    trouble: Option<(String, Instant)>,
    retry_at: Option<Instant>,
    late: u64,
    dropped: u64,
    lost: u64,
    lost_why: Option<String>,
}

/// What [`Ledger::settle`] did with the records a handle kept.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Settled {
    /// Records written after the ledger first refused them.
    pub written_late: u64,
    /// Memory readings dropped because the queue was full.
    pub dropped: u64,
    /// Records in the spill file (`spill`), written by the next Headroom that opens the ledger.
    pub spilled: u64,
    pub spill: Option<PathBuf>,
    /// Records lost (refused for good, or not even a spill file could be written), and why the
    /// first was.
    pub lost: u64,
    pub lost_why: Option<String>,
    /// Why the ledger refused them.
    pub reason: Option<String>,
}

impl Settled {
    /// Whether every record is in the ledger or in a spill file.
    pub fn nothing_lost(&self) -> bool {
        self.lost == 0
    }

    /// What to tell the user; `None` when everything was written in time.
    pub fn message(&self) -> Option<String> {
        if self.spilled == 0 && self.lost == 0 && self.dropped == 0 {
            return None;
        }
        let why = self
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let mut parts = Vec::new();
        if let Some(spill) = &self.spill {
            parts.push(format!(
                "the ledger could not take this run's last {} record(s){why}: they are kept in {} \
                 and written to the ledger by the next headroom command",
                self.spilled,
                spill.display()
            ));
        }
        if self.lost > 0 {
            parts.push(format!(
                "{} record(s) could not be kept anywhere{why}: {}",
                self.lost,
                self.lost_why.as_deref().unwrap_or_default()
            ));
        }
        if self.dropped > 0 {
            parts.push(format!(
                "{} memory reading(s) were dropped while the ledger refused writes",
                self.dropped
            ));
        }
        Some(parts.join("; "))
    }
}

impl Ledger {
    /// From now on, a write the ledger refuses for a reason that may pass is kept and retried
    /// instead of failing (see the module's notes); `tell` prints on stderr when that happens.
    pub fn keep_going(&self, tell: bool) {
        let mut k = self.keep.borrow_mut();
        k.on = true;
        k.tell = tell;
        // A lock is waited for briefly: the records wait in the queue, not the training.
        let _ = self.conn.busy_timeout(KEEP_BUSY);
    }

    /// A handle for a ledger that cannot be opened now (`why`): it keeps every record and, at
    /// [`Ledger::settle`], writes them to the ledger if it opens by then, else to a spill file.
    pub fn detached(path: &Path, why: &CoreError, tell: bool) -> Result<Self, CoreError> {
        let conn = Connection::open_in_memory().map_err(|source| CoreError::Ledger {
            path: ":memory:".into(),
            source,
        })?;
        // The schema, so that reads (cached checksums) find their tables empty.
        super::migrations::migrate(&conn, Path::new(":memory:"))?;
        let ledger = Self::on(conn, path);
        {
            let mut k = ledger.keep.borrow_mut();
            k.on = true;
            k.tell = tell;
            k.detached = Some(why.to_string());
            k.trouble = Some((why.to_string(), Instant::now()));
        }
        if tell {
            eprintln!(
                "headroom: {why}\nheadroom: the command runs anyway; what Headroom measures is \
                 kept and written to the ledger when it can be"
            );
        }
        Ok(ledger)
    }

    /// Writes `op` now, or (keeping going) queues it behind the writes still waiting. Returns
    /// the new row's id (a provisional negative one for a run begun while the ledger refuses).
    pub(super) fn write(&self, mut op: Op) -> Result<i64, CoreError> {
        let mut k = self.keep.borrow_mut();
        if !k.on {
            return op.exec(&self.conn, &k.ids).map_err(|e| self.err(e));
        }
        let provisional = (op.stmt == Stmt::BeginRun).then(|| {
            k.next_provisional -= 1;
            k.next_provisional
        });
        op.creates = provisional;
        if k.bytes + op.bytes() > KEEP_BYTES && op.droppable() {
            k.dropped += 1;
            return Ok(0);
        }
        k.bytes += op.bytes();
        k.pending.push_back(op);
        let due = k.retry_at.is_none_or(|at| Instant::now() >= at);
        if due {
            self.flush(&mut k, &self.conn);
        }
        Ok(provisional.map_or(0, |p| k.ids.get(&p).copied().unwrap_or(p)))
    }

    /// Writes the queued ops in order until one is refused.
    fn flush(&self, k: &mut Keep, conn: &Connection) {
        if k.detached.is_some() && std::ptr::eq(conn, &self.conn) {
            return;
        }
        while let Some(op) = k.pending.front() {
            match op.exec(conn, &k.ids) {
                Ok(row) => {
                    if let Some(p) = op.creates {
                        k.ids.insert(p, row);
                    }
                    k.bytes = k.bytes.saturating_sub(op.bytes());
                    k.pending.pop_front();
                    if k.trouble.is_some() {
                        k.late += 1;
                    }
                }
                Err(e) if may_pass(&e) => {
                    if k.trouble.is_none() {
                        let why = self.err(e).to_string();
                        if k.tell {
                            eprintln!(
                                "headroom: {why}\nheadroom: the command goes on; Headroom keeps \
                                 its records and writes them when the ledger takes them again"
                            );
                        }
                        k.trouble = Some((why, Instant::now()));
                    }
                    k.retry_at = Some(Instant::now() + RETRY);
                    return;
                }
                Err(e) => {
                    let why = self.err(e).to_string();
                    if k.tell {
                        eprintln!("headroom: a record could not be written and is lost: {why}");
                    }
                    k.lost += 1;
                    k.lost_why.get_or_insert(why);
                    k.bytes = k.bytes.saturating_sub(op.bytes());
                    k.pending.pop_front();
                }
            }
        }
        if let Some((_, since)) = k.trouble.take() {
            if k.tell && k.late > 0 {
                eprintln!(
                    "headroom: the ledger takes writes again: {} record(s) kept for {:.0} s are \
                     written",
                    k.late,
                    since.elapsed().as_secs_f64()
                );
            }
        }
        k.retry_at = None;
    }

    /// Ends keeping going: waits up to a few seconds for the ledger to take what is queued,
    /// then writes the rest to a spill file beside it. Says what became of the records.
    pub fn settle(&self) -> Settled {
        let mut k = self.keep.borrow_mut();
        let mut reason = k.trouble.as_ref().map(|(w, _)| w.clone());
        if !k.pending.is_empty() {
            let deadline = Instant::now() + SETTLE_WAIT;
            if k.detached.is_some() {
                match Self::open_waiting(&self.path, SETTLE_WAIT) {
                    Ok(real) => {
                        let _ = real.conn.busy_timeout(SETTLE_WAIT);
                        self.flush(&mut k, &real.conn);
                    }
                    Err(e) => reason = Some(e.to_string()),
                }
            } else {
                let _ = self.conn.busy_timeout(Duration::from_millis(200));
                while !k.pending.is_empty() && Instant::now() < deadline {
                    self.flush(&mut k, &self.conn);
                    if !k.pending.is_empty() {
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
                let _ = self.conn.busy_timeout(KEEP_BUSY);
            }
        }
        let mut settled = Settled {
            written_late: k.late,
            dropped: k.dropped,
            lost: std::mem::take(&mut k.lost),
            lost_why: k.lost_why.take(),
            reason,
            ..Settled::default()
        };
        if !k.pending.is_empty() {
            let ops: Vec<Op> = k.pending.drain(..).collect();
            k.bytes = 0;
            match spill(&self.path, &ops, &k.ids) {
                Ok(at) => {
                    settled.spilled = ops.len() as u64;
                    settled.spill = Some(at);
                }
                Err(e) => {
                    settled.lost += ops.len() as u64;
                    settled
                        .lost_why
                        .get_or_insert(format!("no spill file could be written: {e}"));
                }
            }
        }
        k.trouble = None;
        settled
    }

    /// Writes the spill files left beside the ledger (by runs that ended while it refused
    /// writes), each in one transaction, and removes them. A file another process is
    /// replaying, or one that fails, stays for a later open.
    pub(super) fn replay_spills(&self) {
        let (Some(dir), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        let prefix = format!("{}.spill-", name.to_string_lossy());
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if !file.starts_with(&prefix) || !file.ends_with(".jsonl") {
                continue;
            }
            let at = entry.path();
            // Claimed by renaming: of two processes opening the ledger, one replays it.
            let claimed = at.with_file_name(format!("{file}.replaying-{}", std::process::id()));
            if std::fs::rename(&at, &claimed).is_err() {
                continue;
            }
            if self.replay(&claimed).is_ok() {
                let _ = std::fs::remove_file(&claimed);
            } else {
                let _ = std::fs::rename(&claimed, &at);
            }
        }
    }

    fn replay(&self, at: &Path) -> Result<(), CoreError> {
        let text = std::fs::read_to_string(at).map_err(|source| CoreError::Io {
            what: "cannot read the spill file",
            path: at.display().to_string(),
            source,
        })?;
        let ops = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str::<Op>)
            .collect::<Result<Vec<_>, _>>()?;
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let mut ids = HashMap::new();
        for op in &ops {
            let row = op.exec(&tx, &ids).map_err(|e| self.err(e))?;
            if let Some(p) = op.creates {
                ids.insert(p, row);
            }
        }
        tx.commit().map_err(|e| self.err(e))
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let waiting = !self.keep.get_mut().pending.is_empty();
        if waiting {
            let tell = self.keep.get_mut().tell;
            let settled = self.settle();
            if tell {
                if let Some(m) = settled.message() {
                    eprintln!("headroom: {m}");
                }
            }
        }
    }
}

/// Writes `ops` (provisional ids already mapped where their run was written) to a new spill
/// file beside the ledger at `ledger`, synced; its path.
fn spill(ledger: &Path, ops: &[Op], ids: &HashMap<i64, i64>) -> std::io::Result<PathBuf> {
    use std::io::Write;
    let name = ledger.file_name().map_or_else(
        || "ledger.sqlite3".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let at = ledger.with_file_name(format!("{name}.spill-{}-{nanos}.jsonl", std::process::id()));
    let mut text = String::new();
    for op in ops {
        let mut op = op.clone();
        if op.stmt.names_a_run() {
            if let Some(Val::Int(id)) = op.values.first_mut() {
                if let Some(real) = ids.get(id) {
                    *id = *real;
                }
            }
        }
        text.push_str(&serde_json::to_string(&op).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    let partial = at.with_extension("partial");
    let result = (|| {
        let mut f = std::fs::File::create(&partial)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&partial, &at)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{NewRun, RunKind, RunStatus};

    fn new_run() -> NewRun {
        NewRun {
            kind: RunKind::Run,
            // Not this machine: no conditions sampled at its start.
            host: "elsewhere".into(),
            device: "cpu".into(),
            device_name: "cpu".into(),
            workload: "train.py".into(),
            dtype: None,
            mode: None,
            libtorch: "unknown".into(),
            git_commit: None,
            git_dirty: None,
            budget_bytes: None,
            fallback: None,
            request_json: "{}".into(),
            owner_pid: None,
        }
    }

    /// Holds the ledger's write lock from a second connection, as another process would.
    fn hold(path: &Path) -> Connection {
        let c = Connection::open(path).expect("second connection");
        c.execute_batch("BEGIN EXCLUSIVE").expect("lock");
        c
    }

    #[test]
    fn a_run_begun_under_a_lock_is_written_late_with_its_real_id_and_nothing_is_lost() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("ledger.sqlite3");
        let ledger = Ledger::open(&path).expect("open");
        ledger.keep_going(false);
        let first = ledger.begin_run(&new_run()).expect("first");
        assert!(first > 0);
        let lock = hold(&path);
        let second = ledger.begin_run(&new_run()).expect("kept");
        assert!(second < 0, "a provisional id while locked: {second}");
        ledger.add_sample(second, 1, "epoch", &1).expect("kept");
        ledger.add_sample(first, 1, "epoch", &1).expect("kept");
        ledger
            .finish_run(second, RunStatus::Complete, None, None)
            .expect("kept");
        drop(lock);
        let settled = ledger.settle();
        assert_eq!(settled.spilled, 0, "{settled:?}");
        assert_eq!(settled.written_late, 4, "{settled:?}");
        assert!(settled.nothing_lost());
        let runs = ledger.list_runs(10).expect("runs");
        assert_eq!(runs.len(), 2);
        let late = runs.iter().find(|r| r.id != first).expect("the late run");
        assert_eq!(late.status, RunStatus::Complete);
        assert_eq!(
            ledger
                .samples::<i32>(late.id, "epoch")
                .expect("its epoch")
                .len(),
            1
        );
    }

    #[test]
    fn what_a_lock_still_holds_at_the_end_is_spilled_and_replayed_by_the_next_open() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("ledger.sqlite3");
        drop(Ledger::open(&path).expect("create"));
        let lock = hold(&path);
        let ledger = Ledger::open_waiting(&path, Duration::from_millis(50))
            .inspect(|l| l.keep_going(false))
            .or_else(|e| Ledger::detached(&path, &e, false))
            .expect("a handle");
        let id = ledger.begin_run(&new_run()).expect("kept");
        for seq in 1..=3 {
            ledger.add_sample(id, seq, "epoch", &seq).expect("kept");
        }
        ledger
            .finish_run(id, RunStatus::Complete, None, Some("done"))
            .expect("kept");
        let settled = ledger.settle();
        assert_eq!(settled.spilled, 5, "{settled:?}");
        assert!(settled.nothing_lost());
        let spill = settled.spill.clone().expect("a spill file");
        assert!(spill.exists());
        assert!(settled.message().expect("said").contains("spill"));
        drop(lock);
        let next = Ledger::open(&path).expect("next open");
        assert!(!spill.exists(), "replayed and removed");
        let runs = next.list_runs(10).expect("runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status, RunStatus::Complete);
        assert_eq!(runs[0].note.as_deref(), Some("done"));
        assert_eq!(
            next.samples::<u32>(runs[0].id, "epoch").expect("epochs"),
            [1, 2, 3]
        );
    }

    #[test]
    fn past_the_bound_memory_readings_are_dropped_and_counted_and_the_rest_kept() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("ledger.sqlite3");
        let ledger = Ledger::open(&path).expect("open");
        ledger.keep_going(false);
        let id = ledger.begin_run(&new_run()).expect("run");
        let lock = hold(&path);
        let reading = "x".repeat(1 << 20);
        let n = (KEEP_BYTES >> 20) as u32 + 8;
        for seq in 1..=n {
            ledger
                .add_sample(id, seq, "memory", &reading)
                .expect("kept");
        }
        ledger.add_sample(id, 100_001, "epoch", &1).expect("kept");
        drop(lock);
        let settled = ledger.settle();
        assert!(settled.dropped >= 8, "{settled:?}");
        assert!(settled.nothing_lost());
        assert_eq!(ledger.samples::<i32>(id, "epoch").expect("epoch"), [1]);
    }

    #[test]
    fn values_read_back_from_a_spill_line_as_they_were_written() {
        let op = Op {
            stmt: Stmt::FinishWatch,
            values: vec![
                Val::Int(-1),
                Val::Text("complete".into()),
                Val::Real(1.5),
                Val::Real(2.0),
                Val::Null,
            ],
            creates: None,
        };
        let line = serde_json::to_string(&op).expect("json");
        assert_eq!(serde_json::from_str::<Op>(&line).expect("back"), op);
    }
}
