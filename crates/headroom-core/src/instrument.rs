//! The user's training observed from inside, with no code change: `headroom run` puts a
//! `sitecustomize` of Headroom's (`instrument/sitecustomize.py`) on the child's import path and
//! listens on a Unix socket named in `HEADROOM_EVENTS`. Once the program imports torch, each of
//! its Python processes (the trainer, DataLoader workers, `torchrun` ranks) reports JSON lines:
//! optimizer steps, backward calls, DataLoader waits and epochs, device memory, autocast, compile,
//! checkpointing, the seed, CPU fallbacks and an out-of-memory error. This module is the
//! listener ([`Channel`]), the events ([`Event`]) and their sum ([`Observation`] → [`Observed`]).

use std::io::{BufRead, BufReader, Read};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::CoreError;

/// The observer, written next to the socket and put first on `PYTHONPATH`.
pub const SITECUSTOMIZE: &str = include_str!("instrument/sitecustomize.py");

/// The environment variable that names the socket (the observer does nothing without it).
pub const EVENTS_ENV: &str = "HEADROOM_EVENTS";

/// The environment variable that names a start's gate: the observer stops the process before
/// its first batch until that file exists (see the observer's head), and says where it stands
/// beside it (`.armed` once torch is imported, `.waiting` at the gate).
pub const GATE_ENV: &str = "HEADROOM_GATE";

/// The environment variable that sets the DataLoader stall threshold in seconds (the
/// observer reports a longer wait for a batch; 0 turns it off).
pub const STALL_ENV: &str = "HEADROOM_STALL_S";

/// The environment variable that sets how often the observer sends what it buffered, in
/// seconds (0.25 unless told): a start that is stopped once its step time settles, or after
/// a number of steps, asks for [`SETTLE_FLUSH_S`], so it is stopped within a few steps of
/// that, not a quarter second of steps later.
pub const FLUSH_ENV: &str = "HEADROOM_FLUSH_S";

/// The observer's send interval for a start stopped once it settles.
pub const SETTLE_FLUSH_S: f64 = 0.02;

/// The stall threshold when the user gives none (`run --stall-after`): long enough for a first
/// batch from a slow disk, short enough that a hang is seen within minutes.
pub const DEFAULT_STALL_S: u32 = 120;

/// The environment variable that runs the program's forward passes under autocast (`bf16`,
/// `f16`) or with the same hooks and none (`off`): `run --sweep amp=off,bf16`.
pub const AMP_ENV: &str = "HEADROOM_AMP";

/// The values `amp` takes, in a sweep or `run --amp`.
pub const AMP_VALUES: [&str; 3] = ["off", "bf16", "f16"];

/// The environment variable that releases memory at every epoch end the observer sees
/// (`gc`: `gc.collect()`, `empty-cache`: the device's `empty_cache()`, `both`, `none`):
/// `run --release`, `run --sweep release=none,both`.
pub const RELEASE_ENV: &str = "HEADROOM_RELEASE";

/// The values `release` takes, in a sweep or `run --release`.
pub const RELEASE_VALUES: [&str; 4] = ["none", "gc", "empty-cache", "both"];

/// The environment variables of `run --profile-window N`: the window's iterations, the
/// iterations before it, and the folder its Chrome trace is written to.
pub const PROFILE_WINDOW_ENV: &str = "HEADROOM_PROFILE_WINDOW";
pub const PROFILE_WARMUP_ENV: &str = "HEADROOM_PROFILE_WARMUP";
pub const PROFILE_DIR_ENV: &str = "HEADROOM_PROFILE_DIR";

/// The observer's environment for `headroom numerics`: the compared side's dtype (`f32`,
/// `bf16`, `f16`) and the tolerance.
/// The tolerance `headroom numerics` and the app's "Check numerics" use unless told: a relative
/// error of 1e-3 over the reference's largest magnitude.
pub const DEFAULT_NUMERICS_TOLERANCE: f64 = 1e-3;

pub fn numerics_env(dtype: &str, tolerance: f64) -> Vec<(String, String)> {
    vec![
        ("HEADROOM_NUMERICS".to_owned(), dtype.to_owned()),
        (
            "HEADROOM_NUMERICS_TOLERANCE".to_owned(),
            format!("{tolerance:e}"),
        ),
    ]
}

/// Headroom's notebook runner (nbclient with the cells' outputs passed through live), written to
/// the data folder's `notebook/headroom_notebook.py` and returned.
pub fn notebook_runner() -> Result<std::path::PathBuf, CoreError> {
    let dir = crate::paths::data_dir()?.join("notebook");
    crate::paths::ensure_dir(&dir)?;
    let path = dir.join("headroom_notebook.py");
    let text = include_str!("instrument/notebook.py");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
        std::fs::write(&path, text).map_err(|e| {
            CoreError::InvalidInput(format!("cannot write {}: {e}", path.display()))
        })?;
    }
    Ok(path)
}

/// The iterations before a profiler window when none is given.
pub const DEFAULT_PROFILE_WARMUP: u32 = 10;

/// The observer's environment for a profiler window of `window` iterations after `warmup`,
/// its trace written to the data folder's `traces/` (created here).
pub fn profile_env(window: u32, warmup: u32) -> Result<Vec<(String, String)>, CoreError> {
    if window == 0 || warmup == 0 {
        return Err(CoreError::InvalidInput(
            "--profile-window and --profile-warmup must be 1 or more".into(),
        ));
    }
    let traces = crate::paths::data_dir()?.join("traces");
    crate::paths::ensure_dir(&traces)?;
    Ok(vec![
        (PROFILE_WINDOW_ENV.to_owned(), window.to_string()),
        (PROFILE_WARMUP_ENV.to_owned(), warmup.to_string()),
        (PROFILE_DIR_ENV.to_owned(), traces.display().to_string()),
    ])
}

pub use headroom_model::observed::*;

/// A line longer than this ends the connection: the observer never writes one.
const MAX_LINE: u64 = 1 << 20;

/// The listening side: a folder holding the observer and the socket, removed on drop.
#[derive(Debug)]
pub struct Channel {
    dir: PathBuf,
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    acceptor: Option<std::thread::JoinHandle<Vec<std::thread::JoinHandle<()>>>>,
}

impl Channel {
    /// Writes the observer into a fresh folder under the system's temporary folder and starts
    /// listening; every event is sent on `tx` (wrapped by `wrap`).
    pub fn open<T: Send + 'static>(
        tx: mpsc::SyncSender<T>,
        wrap: fn(Event) -> T,
    ) -> Result<Self, CoreError> {
        let dir = fresh_dir()?;
        let io = |what: &'static str, e: std::io::Error| CoreError::Io {
            what,
            path: dir.display().to_string(),
            source: e,
        };
        std::fs::write(dir.join("sitecustomize.py"), SITECUSTOMIZE).map_err(|e| {
            io(
                "cannot write Headroom's observer (set TMPDIR to a writable folder) in",
                e,
            )
        })?;
        let socket = dir.join("events.sock");
        let listener = UnixListener::bind(&socket)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| {
                io(
                    "cannot listen for the observer's events (set TMPDIR to a writable folder) in",
                    e,
                )
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || accept(&listener, &stop, &tx, wrap))
        };
        Ok(Self {
            dir,
            socket,
            stop,
            acceptor: Some(acceptor),
        })
    }

    /// The environment a child needs to be observed: the socket, and the observer first on
    /// `PYTHONPATH` (before what the environment already has there).
    pub fn env(&self) -> Vec<(String, std::ffi::OsString)> {
        let mut path = self.dir.clone().into_os_string();
        if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(old);
        }
        vec![
            (EVENTS_ENV.to_owned(), self.socket.clone().into_os_string()),
            ("PYTHONPATH".to_owned(), path),
        ]
    }

    /// The gate file of a process started at a gate ([`GATE_ENV`]), in this channel's folder (a
    /// process waiting there ends itself when the folder is removed with the channel).
    pub fn gate_path(&self) -> PathBuf {
        self.dir.join("gate")
    }

    /// How far the process started at this channel's gate has come.
    pub fn gate_state(&self) -> GateState {
        let gate = self.gate_path();
        let beside = |ext: &str| {
            let mut p = gate.clone().into_os_string();
            p.push(ext);
            PathBuf::from(p).exists()
        };
        if beside(".waiting") {
            GateState::Waiting
        } else if beside(".armed") {
            GateState::Armed
        } else {
            GateState::Starting
        }
    }

    /// Lets the process past its gate.
    pub fn open_gate(&self) -> Result<(), CoreError> {
        let gate = self.gate_path();
        std::fs::write(&gate, b"").map_err(|e| CoreError::Io {
            what: "cannot open the gate of a run started ahead in",
            path: self.dir.display().to_string(),
            source: e,
        })
    }

    /// Stops accepting, and waits up to `grace` for the connections still open to end (a
    /// process that outlives the command would otherwise hold the run open).
    pub fn close(mut self, grace: Duration) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.acceptor.take() {
            let readers = a.join().unwrap_or_default();
            let until = Instant::now() + grace;
            while readers.iter().any(|r| !r.is_finished()) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes the `headroom-run-PID-N` folders in `base` whose headroom process is gone (one
/// killed with SIGKILL cannot remove its own).
/// Where a command started at a gate (`jobs::watch::launch` with `gated`) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateState {
    /// Not yet observed from inside (the interpreter starting, or a program without torch).
    Starting,
    /// torch is imported and the observer hooked in: the gate comes before its first batch.
    Armed,
    /// Waiting at the gate: started up, no batch-sized work done.
    Waiting,
    /// The command has ended (before its gate: a crash at import, a bad argument).
    Exited,
}

/// Removes the `headroom-run-PID-N` folders in `base` whose headroom process is gone (one
/// killed with SIGKILL cannot remove its own).
fn remove_stale(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("headroom-run-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid.filter(|p| *p != std::process::id()) {
            if !crate::child::process_alive(pid) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

fn fresh_dir() -> Result<PathBuf, CoreError> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = std::env::temp_dir();
    remove_stale(&base);
    for _ in 0..100 {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = base.join(format!("headroom-run-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(CoreError::Io {
                    what: "cannot make a folder (set TMPDIR to a writable folder) in",
                    path: base.display().to_string(),
                    source: e,
                })
            }
        }
    }
    Err(CoreError::InvalidInput(format!(
        "cannot make a fresh folder in {}; remove old headroom-run-* folders there",
        base.display()
    )))
}

fn accept<T: Send + 'static>(
    listener: &UnixListener,
    stop: &AtomicBool,
    tx: &mpsc::SyncSender<T>,
    wrap: fn(Event) -> T,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut readers = Vec::new();
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                let _ = conn.set_nonblocking(false);
                let tx = tx.clone();
                readers.push(std::thread::spawn(move || read_events(conn, &tx, wrap)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::SeqCst) {
                    return readers;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => return readers,
        }
    }
}

fn read_events<T>(conn: impl Read, tx: &mpsc::SyncSender<T>, wrap: fn(Event) -> T) {
    let mut r = BufReader::new(conn);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.by_ref().take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 >= MAX_LINE => return,
            Ok(_) => {
                if let Some(ev) = std::str::from_utf8(&line).ok().and_then(Event::parse) {
                    if tx.send(wrap(ev)).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(pid: u32, t: f64, ms: Option<f64>, data_ms: f64, backward: u32) -> Event {
        Event::Step {
            pid,
            t,
            n: 0,
            ms,
            data_ms,
            copy_ms: data_ms / 10.0,
            backward,
            batch: Some(64),
            mem: None,
            kind: IterationKind::Train,
            micro: None,
            opt: 1,
            skipped: 0,
            syncs: 0,
            sync_ms: 0.0,
            eval_ms: 0.0,
        }
    }

    #[test]
    fn host_syncs_per_iteration_and_their_share_of_the_step_are_summed() {
        let mut o = Observation::default();
        for (i, (syncs, sync_ms)) in [(1, 0.0), (1, 3.0), (2, 5.0), (1, 2.0)].iter().enumerate() {
            let ev: Event = serde_json::from_value(serde_json::json!({
                "ev": "step", "pid": 7, "t": 100.0 + i as f64, "n": i + 1, "kind": "train",
                "backward": 1, "opt": 1, "batch": 32, "syncs": syncs, "sync_ms": sync_ms,
                "ms": if i == 0 { None } else { Some(50.0) },
            }))
            .expect("a step event");
            o.take(ev, 99.0);
        }
        let ev: Event = serde_json::from_value(serde_json::json!({
            "ev": "flag", "pid": 7, "t": 104.0, "name": "sync_site", "value": "train.py:41 .item()"
        }))
        .expect("a flag");
        o.take(ev, 99.0);
        let ob = &o.observed;
        assert_eq!(ob.syncs_per_step, Some(1), "the median iteration's count");
        // 10 ms of 150 timed ms (the first iteration is untimed).
        let share = ob.sync_share.expect("a share");
        assert!((share - 10.0 / 150.0).abs() < 1e-9, "{share}");
        assert_eq!(ob.sync_site.as_deref(), Some("train.py:41 .item()"));
        // An older observer sends no syncs: none are reported.
        let mut old = Observation::default();
        old.take(step(7, 100.0, Some(20.0), 0.0, 1), 99.0);
        assert_eq!(
            (old.observed.syncs_per_step, old.observed.sync_share),
            (None, None)
        );
    }

    /// Issue 38: a process that only ran forward passes (a DataLoader worker whose transforms
    /// are modules, on an older observer) gives way to the process that trains.
    #[test]
    fn the_process_that_trains_is_the_main_one() {
        let mut o = Observation::default();
        let infer = |pid, t| {
            let Event::Step {
                n,
                ms,
                data_ms,
                copy_ms,
                batch,
                mem,
                micro,
                skipped,
                ..
            } = step(pid, t, None, 0.0, 0)
            else {
                unreachable!("a step")
            };
            Event::Step {
                pid,
                t,
                n,
                ms,
                data_ms,
                copy_ms,
                backward: 0,
                batch,
                mem,
                kind: IterationKind::Infer,
                micro,
                opt: 0,
                skipped,
                syncs: 0,
                sync_ms: 0.0,
                eval_ms: 0.0,
            }
        };
        o.take(infer(8, 100.0), 99.0);
        o.take(infer(8, 100.1), 99.0);
        assert_eq!((o.main_pid, o.observed.inference), (Some(8), true));
        o.take(step(7, 100.5, None, 0.0, 1), 99.0);
        o.take(step(7, 101.0, Some(500.0), 0.0, 1), 99.0);
        o.take(infer(8, 101.1), 99.0);
        assert_eq!(o.main_pid, Some(7));
        assert_eq!(o.observed.steps, 2);
        assert!(!o.observed.inference);
    }

    #[test]
    fn events_parse_and_unknown_ones_are_ignored() {
        let hello = r#"{"ev":"hello","torch":"2.11.0","mps_built":true,"mps_available":false,"start_method":null,"argv":["t.py"],"pid":7,"t":10.5}"#;
        assert!(matches!(
            Event::parse(hello),
            Some(Event::Hello { pid: 7, .. })
        ));
        let step = r#"{"ev":"step","n":2,"data_ms":5.4,"backward":2,"batch":64,"mem":{"device":"cuda:0","allocated":100,"reserved":300,"peak":250},"ms":27.8,"pid":7,"t":11.0}"#;
        let Some(Event::Step { mem: Some(m), .. }) = Event::parse(step) else {
            panic!("a step")
        };
        assert_eq!((m.high(), m.cached()), (Some(250), Some(200)));
        assert_eq!(
            Event::parse(r#"{"ev":"later","pid":1,"t":1}"#),
            Some(Event::Unknown)
        );
        assert_eq!(Event::parse("not json"), None);
    }

    #[test]
    fn the_first_process_to_step_is_the_main_one_and_accumulation_is_the_median() {
        let mut o = Observation::default();
        o.take(step(7, 100.0, None, 3.0, 4), 99.0);
        o.take(step(7, 100.5, Some(500.0), 400.0, 4), 99.0);
        o.take(step(8, 100.6, None, 0.0, 1), 99.0);
        o.take(step(7, 101.0, Some(500.0), 100.0, 4), 99.0);
        assert_eq!(o.observed.steps, 3);
        assert_eq!(o.observed.stepping_processes, 2);
        assert_eq!(o.observed.accumulation, Some(4));
        // Two steps after the first, 4 batches of 64 each, over one second.
        assert!((o.samples_per_s(None).unwrap() - 512.0).abs() < 1e-9);
        let (data, share) = o.data();
        assert_eq!(data, vec![400.0, 100.0]);
        assert!((share.unwrap() - 0.5).abs() < 1e-9);
        // Copies (a tenth of the data waits here) over the timed steps' time.
        assert!((o.observed.copy_share.unwrap() - 0.05).abs() < 1e-9);
    }

    /// Training iterations of batch 32 closing at each `(t, eval_ms)`, taken by an observation
    /// of a run started at `started`.
    fn with_evaluations(steps: &[(f64, f64)], started: f64) -> Observation {
        let mut o = Observation::default();
        for (i, (t, eval_ms)) in steps.iter().enumerate() {
            let ev: Event = serde_json::from_value(serde_json::json!({
                "ev": "step", "pid": 7, "t": t, "n": i + 1, "kind": "train", "backward": 1,
                "opt": 1, "batch": 32, "ms": if i == 0 { None } else { Some(250.0) },
                "eval_ms": eval_ms,
            }))
            .expect("a step event");
            o.take(ev, started);
        }
        o
    }

    /// A validation pass between two iterations (its time sent as `eval_ms`, already out of
    /// the iteration's `ms`) is taken out of the span samples/s is measured over.
    #[test]
    fn evaluation_time_between_iterations_is_no_training_time() {
        let o = with_evaluations(
            &[(100.0, 0.0), (100.25, 0.0), (101.5, 1000.0), (101.75, 0.0)],
            99.0,
        );
        // Three iterations of 32 after the first over 1.75 s, a second of it evaluating.
        let rate = o.samples_per_s(None).expect("a rate");
        assert!((rate - 96.0 / 0.75).abs() < 1e-9, "{rate}");
        // An observer that sends no eval_ms: the whole span.
        let mut old = Observation::default();
        old.take(step(7, 100.0, None, 0.0, 1), 99.0);
        old.take(step(7, 102.0, Some(2000.0), 0.0, 1), 99.0);
        assert!((old.samples_per_s(None).unwrap() - 32.0).abs() < 1e-9);
    }

    /// An epoch's evaluation time: a validation every few iterations inside it counts whole;
    /// one after the previous epoch, sent with this epoch's first iteration, counts only for
    /// what cannot have run before this epoch began.
    #[test]
    fn evaluation_inside_an_epoch_is_told_from_one_before_it() {
        // Iterations at 100.0 and 100.5; a 2 s validation; the next epoch begins at 102.6 and
        // its first iteration closes at 102.9 (eval 2000 ms); then one at 103.2; a 0.5 s
        // mid-epoch validation before the one at 104.0.
        let o = with_evaluations(
            &[
                (100.0, 0.0),
                (100.5, 0.0),
                (102.9, 2000.0),
                (103.2, 0.0),
                (104.0, 500.0),
            ],
            0.0,
        );
        // The epoch from 102.6 to 104.0: only the mid-epoch 0.5 s (the 2 s ran from 100.5 to
        // at most 102.6, all before it).
        let inside = o.evaluated_between(102.6, 104.0);
        assert!((inside - 0.5).abs() < 1e-9, "{inside}");
        // A window from 101.0 holds what of the 2 s could have run after 101.0 (1.5 s) too.
        let wider = o.evaluated_between(101.0, 104.0);
        assert!((wider - 2.0).abs() < 1e-9, "{wider}");
        // The first epoch (100.0 to 100.5) evaluated nothing.
        assert_eq!(o.evaluated_between(99.0, 100.5), 0.0);
    }

    /// A profiler window of a model on an accelerator, shaped as the observer sends it
    /// (torch.profiler's averages by name; the CUDA path is not run on this machine): a
    /// convolution with most of the kernel time, a `.item()` that waited, the driver's launch
    /// calls, an operator that ran on the host only, and the kernels themselves.
    fn device_window(device: &str) -> serde_json::Value {
        let op = |name: &str, calls: u64, self_cpu: f64, self_dev: f64, dev: f64, on: bool| {
            serde_json::json!({"name": name, "calls": calls, "self_cpu_us": self_cpu,
                "cpu_us": self_cpu, "self_device_us": self_dev, "device_us": dev, "on_device": on})
        };
        serde_json::json!({
            "iterations": 20, "asked": 20, "warmup": 10, "window_s": 2.0, "write_s": 0.5,
            "before_ms": 90.0, "device": device, "trace": "/tmp/t.json", "cut": false,
            "ops": [
                op("aten::convolution", 1060, 30_000.0, 900_000.0, 900_000.0, false),
                op("aten::batch_norm", 1060, 20_000.0, 300_000.0, 300_000.0, false),
                op("aten::_local_scalar_dense", 20, 400_000.0, 40.0, 40.0, false),
                op("cudaLaunchKernel", 9000, 60_000.0, 0.0, 0.0, false),
                op("aten::cumsum", 20, 100_000.0, 0.0, 0.0, false),
                op("aten::add_", 4000, 1_000.0, 200_000.0, 200_000.0, false),
                op("void implicit_gemm_kernel<...>", 1060, 0.0, 880_000.0, 880_000.0, true),
                op("void bn_fw_kernel<...>", 1060, 0.0, 300_000.0, 300_000.0, true),
                op("void elementwise_kernel<...>", 4000, 0.0, 220_000.0, 220_000.0, true),
            ]
        })
    }

    #[test]
    fn a_profile_window_is_kept_and_read_for_its_top_operators_and_waits() {
        let mut o = Observation::default();
        o.take(
            Event::Flag {
                pid: 7,
                t: 100.0,
                name: "profile".into(),
                value: device_window("cuda"),
            },
            99.0,
        );
        let w = o.observed.profile.clone().expect("the window is kept");
        assert!(w.on_accelerator());
        // By kernel time, of all kernels (1.4 s): the convolution first; kernels and driver
        // calls are not operators.
        let top = w.top(3);
        let names: Vec<&str> = top.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["aten::convolution", "aten::batch_norm", "aten::add_"]
        );
        assert!((top[0].share - 0.9 / 1.4).abs() < 1e-9, "{top:?}");
        // Long on the host against the device: the .item() (a sync, 20 % of the window), the
        // host-only cumsum, the launches; the convolution (short on the host) is not one.
        let waits: Vec<(String, Option<WaitKind>)> =
            w.waits().into_iter().map(|o| (o.name, o.wait)).collect();
        assert_eq!(
            waits,
            [
                ("aten::_local_scalar_dense".to_owned(), Some(WaitKind::Sync)),
                ("aten::cumsum".to_owned(), Some(WaitKind::Host)),
                ("cudaLaunchKernel".to_owned(), Some(WaitKind::Launch)),
            ]
        );
        // 2.0 s + 0.5 s writing, less 20 × 90 ms unprofiled.
        assert!((w.cost_s().unwrap() - 0.7).abs() < 1e-9);
        let said = w.describe();
        assert!(
            said.contains("top operators of the device time: aten::convolution 64 % (1060 calls)")
                && said.contains("aten::_local_scalar_dense 20 % of the window (a sync)")
                && said.contains("trace /tmp/t.json"),
            "{said}"
        );
        // On MPS the profiler records the host only: operators rank by their host time (of the
        // window), and only a sync can be told from the host work the device queued.
        let mut mps = device_window("mps");
        for op in mps["ops"].as_array_mut().expect("ops") {
            op["self_device_us"] = 0.0.into();
            op["device_us"] = 0.0.into();
        }
        let w: ProfileWindow = serde_json::from_value(mps).expect("window");
        assert!(w.on_accelerator() && !w.has_device_time());
        let top: Vec<String> = w.top(2).into_iter().map(|o| o.name).collect();
        assert_eq!(top, ["aten::_local_scalar_dense", "aten::cumsum"]);
        let waits: Vec<String> = w.waits().into_iter().map(|o| o.name).collect();
        assert_eq!(waits, ["aten::_local_scalar_dense"]);
        assert!(w.describe().contains("top operators of the window: "));
        // A summary that does not parse is kept as the reason there is none.
        let mut o = Observation::default();
        o.take(
            Event::Flag {
                pid: 7,
                t: 100.0,
                name: "profile".into(),
                value: serde_json::json!({"ops": "none"}),
            },
            99.0,
        );
        let w = o.observed.profile.expect("kept");
        assert!(w
            .error
            .as_deref()
            .is_some_and(|e| e.contains("did not parse")));
        assert!(w.describe().starts_with("profiler window: none ("));
    }
}
