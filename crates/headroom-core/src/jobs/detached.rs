//! Runs that outlive the session that started them: `headroom run --detach` starts
//! `headroom run` in a session and process group of its own, its standard streams in a run
//! folder (`<data>/detached/<id>/`), so closing the terminal, the ssh connection or the laptop's
//! lid leaves the training going. On macOS it runs under `caffeinate -i` (the Mac does not
//! sleep while it trains). The folder holds what a later look needs:
//!
//! - `meta.json`: the command, its folder, the project, when it started, the group's pid;
//! - `status.json`: the run's progress, rewritten as it goes (steps, epochs, memory);
//! - `output.log`: the command's output and `headroom run`'s notes;
//! - `result.json`: `headroom run --json`'s result once it ended (empty until then);
//! - `stopped`: written by [`stop`], so a run ended on purpose reads as interrupted.
//!
//! [`list`] and [`read`] say what became of each (running, complete, failed, interrupted),
//! [`follow`] streams its output until it ends, [`stop`] ends its whole process group. The
//! remote side of `headroom remote run` is this module run over ssh.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::outcome::WatchOutcome;
use crate::CoreError;

/// What a detached run is doing, as far as its folder and its process say.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetachedState {
    Running,
    Complete,
    Failed,
    /// Stopped on purpose, or ended without a result (killed with the machine, its folder's
    /// writer gone).
    Interrupted,
}

impl DetachedState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Complete => "complete",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
        }
    }
}

/// How it was started.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetachedMeta {
    pub id: String,
    /// The command `headroom run` runs.
    pub command: Vec<String>,
    /// The folder it runs in.
    pub dir: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub project: Option<String>,
    pub started_at: String,
    /// The process group's leader (its id is the group's): `headroom run`, or `caffeinate`
    /// around it on macOS.
    pub pid: u32,
    /// The machine it runs on.
    pub host: String,
}

/// The run's progress as `headroom run` writes it while the command runs.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DetachedStatus {
    /// Its run in the ledger where it runs.
    pub run_id: i64,
    pub seconds: f64,
    pub steps: u32,
    pub epochs: Vec<crate::epochs::EpochSample>,
    /// The command's process tree now, bytes.
    #[serde(default)]
    pub tree_bytes: Option<u64>,
    #[serde(default)]
    pub device_peak_bytes: Option<u64>,
    /// The command's process, the leader of its own process group (its DataLoader workers
    /// are in it): what a stop must reach if `headroom run` cannot pass it on.
    #[serde(default)]
    pub command_pid: Option<u32>,
    pub updated_at: String,
}

/// One detached run as read from its folder.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetachedRun {
    pub meta: DetachedMeta,
    pub state: DetachedState,
    #[serde(default)]
    pub status: Option<DetachedStatus>,
    /// The last line of its output.
    #[serde(default)]
    pub last_line: Option<String>,
    /// `headroom run`'s result once it ended.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub result: Option<WatchOutcome>,
    /// Why it reads as it does when that is not plain (ended without a result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub note: Option<String>,
}

impl DetachedRun {
    /// Its epochs so far: the result's when it ended, else the status's.
    pub fn epochs(&self) -> &[crate::epochs::EpochSample] {
        if let Some(r) = &self.result {
            return &r.epochs;
        }
        self.status.as_ref().map_or(&[], |s| &s.epochs)
    }

    /// Its steps so far.
    pub fn steps(&self) -> u64 {
        match (&self.result, &self.status) {
            (Some(r), _) => u64::from(r.steps),
            (None, Some(s)) => u64::from(s.steps),
            _ => 0,
        }
    }

    /// Where it stands in one line: its epoch, steps, samples/s and memory, when it started
    /// ("epoch 3 · 120 steps · 41.2 samples/s · 1.2 GiB · started 2026-12-05T01:39:32Z").
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let epochs = self.epochs();
        if let Some(e) = epochs.last() {
            parts.push(format!("epoch {}", e.epoch));
        }
        parts.push(format!("{} steps", self.steps()));
        let sps = self
            .result
            .as_ref()
            .and_then(|o| o.samples_per_s)
            .or_else(|| epochs.last().and_then(|e| e.samples_per_s));
        if let Some(s) = sps {
            parts.push(format!("{} samples/s", crate::stats::sig3(s)));
        }
        let memory = self
            .result
            .as_ref()
            .map(|o| o.peak_tree_bytes)
            .or_else(|| self.status.as_ref().and_then(|s| s.tree_bytes));
        if let Some(b) = memory.filter(|b| *b > 0) {
            parts.push(crate::budget::format_bytes(b));
        }
        parts.push(format!("started {}", self.meta.started_at));
        parts.join(" · ")
    }
}

/// Where detached runs keep their folders.
pub fn root() -> Result<PathBuf, CoreError> {
    Ok(crate::paths::data_dir()?.join("detached"))
}

/// Refuses what cannot be a run's id (a path, an empty word) before anything looks for it.
pub fn check_id(id: &str) -> Result<(), CoreError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(CoreError::InvalidInput(format!(
            "{id:?} is not a detached run's id (see `headroom runs`)"
        )));
    }
    Ok(())
}

/// A run's folder, for an id that names one (no path in it).
pub fn folder(id: &str) -> Result<PathBuf, CoreError> {
    check_id(id)?;
    let dir = root()?.join(id);
    if !dir.join("meta.json").is_file() {
        return Err(CoreError::InvalidInput(format!(
            "no detached run {id} here (see `headroom runs`)"
        )));
    }
    Ok(dir)
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> CoreError + 'a {
    move |source| CoreError::Io {
        what,
        path: path.display().to_string(),
        source,
    }
}

/// A new id: the start's time to the second and a random tail (sortable, unique).
fn new_id() -> String {
    let now = crate::time::now_rfc3339();
    let stamp: String = now.chars().take(19).filter(char::is_ascii_digit).collect();
    let tail = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
        ^ std::process::id().rotate_left(16);
    format!("{stamp}-{:06x}", tail & 0x00ff_ffff)
}

/// The program a detached run is started under on this OS: `caffeinate -i` on macOS (the Mac
/// stays awake while it trains; the display may sleep), nothing elsewhere.
pub fn keep_awake() -> Vec<String> {
    if cfg!(target_os = "macos") && Path::new("/usr/bin/caffeinate").is_file() {
        vec!["/usr/bin/caffeinate".into(), "-i".into()]
    } else {
        Vec::new()
    }
}

/// Starts `exe run --json --status-file … ARGS` in a session of its own, in `dir`, and returns
/// at once with its folder's meta. `args` are `headroom run`'s (its options, then `-- CMD …`
/// or `--project P`; a `--json` among them is dropped, the run gives it); `command` is what it
/// runs, as the meta names it.
pub fn start(
    exe: &Path,
    args: &[String],
    command: &[String],
    dir: &Path,
    project: Option<&str>,
) -> Result<DetachedMeta, CoreError> {
    if command.is_empty() {
        return Err(CoreError::InvalidInput(
            "a detached run needs a command".into(),
        ));
    }
    let id = new_id();
    let folder = root()?.join(&id);
    crate::paths::ensure_dir(&folder)?;
    let file = |name: &str| -> Result<std::fs::File, CoreError> {
        let p = folder.join(name);
        std::fs::File::create(&p).map_err(io("cannot create a detached run's file", &p))
    };
    let (result, output) = (file("result.json")?, file("output.log")?);
    let mut argv = keep_awake();
    argv.push(exe.display().to_string());
    argv.extend(["run".into(), "--json".into(), "--status-file".into()]);
    argv.push(folder.join("status.json").display().to_string());
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    argv.extend(args[..split].iter().filter(|a| *a != "--json").cloned());
    argv.extend(args[split..].iter().cloned());
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(result)
        .stderr(output);
    // SAFETY: setsid is async-signal-safe; between fork and exec nothing else runs.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(io("cannot start", &argv_path(&argv)))?;
    let meta = DetachedMeta {
        id,
        command: command.to_vec(),
        dir: dir.display().to_string(),
        project: project.map(str::to_owned),
        started_at: crate::time::now_rfc3339(),
        pid: child.id(),
        host: crate::machine::hostname(),
    };
    let meta_path = folder.join("meta.json");
    crate::paths::write_atomically(&meta_path, &serde_json::to_vec_pretty(&meta)?, 0o644)?;
    // The child is not waited for: it is its own session's leader and outlives this process.
    drop(child);
    Ok(meta)
}

fn argv_path(argv: &[String]) -> PathBuf {
    PathBuf::from(argv.first().cloned().unwrap_or_default())
}

/// Whether process `pid` lives (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    let Ok(p) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only asks whether the process exists.
    if unsafe { libc::kill(p, 0) } != 0 {
        return false;
    }
    // A zombie (ended, its parent not yet told) still answers kill(0).
    #[cfg(target_os = "linux")]
    if let Some(stat) = crate::sysmem::Stat::of(pid) {
        return !stat.ended();
    }
    true
}

/// The last non-empty line of `path`, read from its end.
fn last_line(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(4096);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    // A progress bar redraws with carriage returns: its newest state.
    text.lines()
        .rev()
        .map(|l| l.rsplit('\r').find(|s| !s.trim().is_empty()).unwrap_or(""))
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim_end().chars().take(300).collect())
}

/// The run in `folder`, as its files and its process say.
pub fn read_folder(folder: &Path) -> Result<DetachedRun, CoreError> {
    let meta_path = folder.join("meta.json");
    let meta: DetachedMeta = serde_json::from_slice(
        &std::fs::read(&meta_path).map_err(io("cannot read a detached run", &meta_path))?,
    )?;
    let status = std::fs::read(folder.join("status.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<DetachedStatus>(&b).ok());
    let result = std::fs::read(folder.join("result.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<WatchOutcome>(&b).ok());
    let stopped = folder.join("stopped").exists();
    let (state, note) = match &result {
        Some(r) if r.interrupted || stopped => (DetachedState::Interrupted, None),
        Some(r) if r.finished() => (DetachedState::Complete, None),
        Some(_) => (DetachedState::Failed, None),
        None if alive(meta.pid) => (DetachedState::Running, None),
        None => (
            DetachedState::Interrupted,
            Some(if stopped {
                "stopped; it ended before it could write its result".to_owned()
            } else {
                "it ended without a result (killed, or the machine went down)".to_owned()
            }),
        ),
    };
    Ok(DetachedRun {
        last_line: last_line(&folder.join("output.log")),
        meta,
        state,
        status,
        result,
        note,
    })
}

/// One run by id.
pub fn read(id: &str) -> Result<DetachedRun, CoreError> {
    read_folder(&folder(id)?)
}

/// Every detached run here, newest first (a folder that cannot be read is passed over).
pub fn list() -> Result<Vec<DetachedRun>, CoreError> {
    let root = root()?;
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(Vec::new());
    };
    let mut runs: Vec<DetachedRun> = entries
        .filter_map(Result::ok)
        .filter_map(|e| read_folder(&e.path()).ok())
        .collect();
    runs.sort_by(|a, b| b.meta.id.cmp(&a.meta.id));
    Ok(runs)
}

/// Ends run `id` and its whole process group: SIGTERM (the run forwards it to the command and
/// keeps its record as interrupted), then SIGKILL to what is left after `grace`. Returns the
/// run as it reads then.
pub fn stop(id: &str, grace: Duration) -> Result<DetachedRun, CoreError> {
    // SAFETY (each use): killpg only sends a signal to a process group.
    let killpg = |g: i32, sig: i32| unsafe { libc::killpg(g, sig) };
    let folder = folder(id)?;
    let run = read_folder(&folder)?;
    if run.state != DetachedState::Running {
        return Ok(run);
    }
    let marker = folder.join("stopped");
    std::fs::write(&marker, crate::time::now_rfc3339())
        .map_err(io("cannot mark a detached run stopped", &marker))?;
    let pid = |p: u32| i32::try_from(p).unwrap_or(i32::MAX);
    // `headroom run`'s group (and caffeinate's), and the command's own.
    let mut groups = vec![pid(run.meta.pid)];
    groups.extend(
        run.status
            .as_ref()
            .and_then(|s| s.command_pid)
            .map(pid)
            .filter(|g| *g != groups[0]),
    );
    let any_alive = |gs: &[i32]| gs.iter().any(|g| group_alive(*g));
    // `headroom run` passes the stop on to its command and keeps its record as interrupted.
    killpg(groups[0], libc::SIGTERM);
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline && any_alive(&groups) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if any_alive(&groups) {
        for g in &groups {
            killpg(*g, libc::SIGKILL);
        }
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < until && any_alive(&groups) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    read_folder(&folder)
}

/// Whether any process of the group lives.
fn group_alive(group: i32) -> bool {
    // SAFETY: signal 0 only asks whether the group has a member.
    (unsafe { libc::killpg(group, 0) } == 0) && {
        // Zombies answer too: a member that still runs is what counts.
        #[cfg(target_os = "linux")]
        {
            any_live_member(group)
        }
        #[cfg(not(target_os = "linux"))]
        {
            true
        }
    }
}

/// Whether a process of group `pgid` lives that is not a zombie (Linux's /proc; when it cannot
/// be read, yes).
#[cfg(target_os = "linux")]
fn any_live_member(pgid: i32) -> bool {
    let Ok(pgid) = u32::try_from(pgid) else {
        return false;
    };
    crate::sysmem::group_members(pgid).is_none_or(|members| members.iter().any(|(_, s)| !s.ended()))
}

/// Streams run `id`'s output to `out` from its start (or its last `tail` bytes) until the run
/// ends or `stop` says so; returns the run as it reads then.
pub fn follow(
    id: &str,
    tail: Option<u64>,
    out: &mut dyn Write,
    stop: &dyn Fn() -> bool,
) -> Result<DetachedRun, CoreError> {
    let folder = folder(id)?;
    let log = folder.join("output.log");
    let mut f =
        std::fs::File::open(&log).map_err(io("cannot read a detached run's output", &log))?;
    if let Some(n) = tail {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(n)));
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf).unwrap_or(0);
        if n > 0 {
            // A reader gone (the ssh connection closed) ends the following, not the run.
            if out.write_all(&buf[..n]).and_then(|()| out.flush()).is_err() {
                return read_folder(&folder);
            }
            continue;
        }
        let run = read_folder(&folder)?;
        if run.state != DetachedState::Running {
            // What it wrote between the last read and its end.
            let mut rest = Vec::new();
            let _ = f.read_to_end(&mut rest);
            let _ = out.write_all(&rest).and_then(|()| out.flush());
            return Ok(run);
        }
        if stop() {
            return Ok(run);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Writes `status` to `path` atomically (a reader never sees half of it).
pub fn write_status(path: &Path, status: &DetachedStatus) -> Result<(), CoreError> {
    crate::paths::write_atomically(path, &serde_json::to_vec(status)?, 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_is_a_progress_bars_newest_state() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("output.log");
        std::fs::write(&p, "epoch 1\n 10%|#   \r 50%|#####  \r100%|##########\n\n").expect("w");
        assert_eq!(last_line(&p).as_deref(), Some("100%|##########"));
        std::fs::write(&p, "").expect("w");
        assert_eq!(last_line(&p), None);
    }

    #[test]
    fn ids_are_names_never_paths() {
        assert!(new_id()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-'));
        for bad in ["", "../x", "a/b", "x y"] {
            let e = folder(bad).expect_err(bad).to_string();
            assert!(e.contains("not a detached run's id"), "{e}");
        }
    }
}
