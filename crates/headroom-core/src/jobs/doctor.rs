//! A readiness check as a job: asks Headroom's libtorch in `headroom worker --doctor`, probes the
//! interpreters found, reads the machine and its conditions, and records the report in the ledger.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::child::{run_captured, Captured};
use crate::ledger::{Ledger, NewRun, RunStatus};
use crate::readiness::python::{self, DiscoveryEnv};
use crate::readiness::{LibtorchFacts, LightState, Report};
use crate::CoreError;

/// What to ask.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// Interpreters named by the user, probed first; the first is the one judged.
    pub pythons: Vec<PathBuf>,
    /// Only those, VIRTUAL_ENV and CONDA_PREFIX: no search.
    pub only_named: bool,
    /// How long each interpreter (and the libtorch worker) may take.
    pub timeout: Duration,
}

impl Default for DoctorOptions {
    fn default() -> Self {
        Self {
            pythons: Vec::new(),
            only_named: false,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Asks `exe worker --doctor`, so a crash or hang in libtorch is a fact, not a crash of ours.
pub fn ask_libtorch(exe: &Path, timeout: Duration) -> Result<LibtorchFacts, String> {
    let mut cmd = Command::new(exe);
    cmd.args(["worker", "--doctor"]);
    match run_captured(&mut cmd, timeout) {
        Ok((status, stdout, stderr)) => {
            let line = stdout.lines().rev().find(|l| l.starts_with('{'));
            match line.map(serde_json::from_str::<LibtorchFacts>) {
                Some(Ok(facts)) => Ok(facts),
                _ => Err(format!(
                    "its worker {} without a report{}",
                    super::supervisor::describe_exit(&status),
                    stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| format!(": {}", l.trim()))
                        .unwrap_or_default()
                )),
            }
        }
        Err(Captured::Spawn(e)) => Err(format!(
            "cannot start its worker {}: {e}; build it with scripts/bootstrap.sh",
            exe.display()
        )),
        Err(Captured::TimedOut) => Err(format!(
            "its worker did not answer within {:.0} s (a hung GPU driver?)",
            timeout.as_secs_f64()
        )),
    }
}

/// Runs every check; `on_found` hears how many interpreters will be asked, before they are.
pub fn check(exe: &Path, opts: &DoctorOptions, on_found: &mut dyn FnMut(usize)) -> Report {
    let timeout = opts.timeout;
    let exe_owned = exe.to_path_buf();
    let lib = crate::child::spawn_alike(move || ask_libtorch(&exe_owned, timeout));
    let mut env = DiscoveryEnv::from_process(opts.pythons.clone());
    // A broken configuration is `doctor`'s to report elsewhere; here it only means no projects.
    env.projects = crate::project::load()
        .map(|all| {
            all.into_values()
                .filter_map(|p| Some((p.name, p.python?)))
                .collect()
        })
        .unwrap_or_default();
    if opts.only_named {
        env = DiscoveryEnv {
            path: None,
            home: None,
            cwd: None,
            system: false,
            ..env
        };
    }
    let candidates = python::discover(&env);
    on_found(candidates.len());
    let pythons = python::probe_all(&candidates, timeout, 3);
    let machine = crate::readiness::system::machine();
    let conditions = crate::readiness::system::conditions();
    let libtorch = lib
        .join()
        .unwrap_or_else(|_| Err("the thread asking libtorch panicked".into()));
    Report::new(machine, conditions, libtorch, pythons)
}

/// A refreshed report, and why it was not recorded where it could not be.
#[derive(Debug)]
pub struct Refreshed {
    pub report: Report,
    /// The ledger's error when the report was to be recorded and could not be (also in the
    /// report's notes, for the panels that show them).
    pub not_recorded: Option<String>,
}

/// The lights' refresh, as the app's start, an opening of its popover and the menu bar's
/// start do it: checks with the default options and records the report only when something
/// changed ([`record_if_changed`]), `from` naming who asked. A ledger that cannot be written
/// (damaged, disk full) does not hide the verdict: the report's notes say it was not recorded,
/// and why, as does [`Refreshed::not_recorded`]. Fails only when the worker binary is missing.
///
/// The check runs on a thread of its own below normal priority ([`BACKGROUND_NICE`]; on Linux
/// the interpreters and the libtorch worker it starts inherit it): the Pythons it imports torch
/// in would otherwise take the CPU from a popover opening beside it (on 2 cores an open during
/// the menu bar's start-up check took twice as long, `bench/first_open.py`).
pub fn refresh(from: &str) -> Result<Refreshed, CoreError> {
    let exe = super::worker_binary()?;
    let report = std::thread::scope(|s| {
        s.spawn(|| {
            lower_this_threads_priority();
            crate::child::as_background(|| check(&exe, &DoctorOptions::default(), &mut |_| {}))
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    let request = serde_json::json!({ "from": from }).to_string();
    let recorded = super::open_ledger().and_then(|l| record_if_changed(&l, &report, &request));
    Ok(noted(report, recorded))
}

/// `report` with what recording it gave: where the ledger failed, a note that says so (the
/// panels show the notes) and the reason apart (the menu bar logs it).
fn noted(mut report: Report, recorded: Result<Option<i64>, CoreError>) -> Refreshed {
    let not_recorded = recorded.err().map(|e| e.to_string());
    if let Some(e) = &not_recorded {
        report
            .notes
            .push(format!("This check was not recorded in the ledger: {e}"));
    }
    Refreshed {
        report,
        not_recorded,
    }
}

/// The nice value a background refresh runs at.
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's scheduling priority to [`BACKGROUND_NICE`] (Linux, where the nice
/// value is a thread's and the processes it starts inherit it; elsewhere nothing: macOS's
/// `setpriority` would lower the whole process).
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid` and `setpriority` on this thread's own id change only its priority.
    unsafe {
        let tid = libc::gettid();
        #[allow(clippy::cast_sign_loss)]
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE);
    }
}

/// Records `report` as [`record`] does, unless the newest readiness check recorded on this
/// host found the same ([`Report::what_matters`]: a Python, torch, MPS flags, the power state
/// changed): the app's refreshes (each start, each opening) add a run only when something
/// changed. Returns the new run, or `None` when nothing did.
pub fn record_if_changed(
    ledger: &Ledger,
    report: &Report,
    request_json: &str,
) -> Result<Option<i64>, CoreError> {
    let host = super::hostname();
    let newest = ledger
        .list_runs(500)?
        .into_iter()
        .filter(|r| {
            r.kind == crate::ledger::RunKind::Doctor
                && r.host == host
                && r.status == RunStatus::Complete
        })
        .find_map(|r| serde_json::from_value::<Report>(r.report?).ok());
    if newest.is_some_and(|n| n.what_matters() == report.what_matters()) {
        return Ok(None);
    }
    record(ledger, report, request_json).map(Some)
}

/// Records `report` in `ledger` as a finished `doctor` run; `request_json` is how it was asked.
pub fn record(ledger: &Ledger, report: &Report, request_json: &str) -> Result<i64, CoreError> {
    record_for(ledger, &super::hostname(), report, request_json)
}

/// [`record`] under `host`: a report a remote's doctor printed is recorded here under the
/// host's name (no git state of this folder, which is not where it ran).
pub fn record_for(
    ledger: &Ledger,
    host: &str,
    report: &Report,
    request_json: &str,
) -> Result<i64, CoreError> {
    let best = report
        .lights
        .iter()
        .find(|l| l.state == LightState::Green && ["cuda", "mps"].contains(&l.backend.as_str()))
        .map_or_else(|| "cpu".to_owned(), |l| l.backend.clone());
    let device_name = report
        .machine
        .gpus
        .first()
        .map(|g| g.name.clone())
        .filter(|_| best != "cpu")
        .or_else(|| report.machine.cpu.clone())
        .unwrap_or_else(|| "unknown".into());
    let git = if host == super::hostname() {
        crate::gitinfo::git_state(&std::env::current_dir().unwrap_or_default())
    } else {
        crate::gitinfo::GitState::default()
    };
    let run = NewRun {
        kind: crate::ledger::RunKind::Doctor,
        host: host.to_owned(),
        device: best,
        device_name,
        workload: "readiness".into(),
        dtype: None,
        mode: None,
        libtorch: report
            .libtorch
            .as_ref()
            .map_or_else(|| "unknown".into(), |l| l.version.clone()),
        git_commit: git.commit,
        git_dirty: git.dirty,
        budget_bytes: None,
        fallback: None,
        request_json: request_json.into(),
        owner_pid: Some(std::process::id()),
    };
    let id = ledger.begin_run(&run)?;
    let verdict = report
        .lights
        .iter()
        .map(|l| format!("{} {}", l.backend, l.state.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    ledger.finish_report(
        id,
        RunStatus::Complete,
        &serde_json::to_value(report)?,
        Some(&verdict),
    )?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> Report {
        serde_json::from_str(include_str!("../../../../bench/results/doctor_h200.json"))
            .expect("a real doctor report")
    }

    #[test]
    fn a_check_that_found_the_same_adds_no_run_and_one_that_found_a_change_does() {
        let dir = tempfile::tempdir().expect("tmp");
        let ledger = Ledger::open(&dir.path().join("l.sqlite3")).expect("ledger");
        let first = h200();
        assert!(record_if_changed(&ledger, &first, "{}")
            .expect("r")
            .is_some());
        // Opened again: the same Pythons, torch and lights, other timings and wording.
        let mut again = h200();
        if let Some(l) = again.lights.first_mut() {
            l.reason.push_str(" (checked again)");
        }
        for d in again.libtorch.iter_mut().flat_map(|l| l.devices.iter_mut()) {
            d.matmul_ms = d.matmul_ms.map(|m| m * 1.7);
        }
        assert_eq!(record_if_changed(&ledger, &again, "{}").expect("r"), None);
        assert_eq!(ledger.list_runs(10).expect("l").len(), 1);
        // A new torch in a Python, then the power source: each a run.
        let mut newer = h200();
        let torch = newer
            .pythons
            .iter_mut()
            .find_map(|p| p.facts.as_mut()?.torch.as_mut())
            .expect("a Python with torch");
        torch.version = "2.12.0".into();
        assert!(record_if_changed(&ledger, &newer, "{}")
            .expect("r")
            .is_some());
        newer.conditions.power_source = Some(crate::readiness::PowerSource::Battery);
        assert!(record_if_changed(&ledger, &newer, "{}")
            .expect("r")
            .is_some());
        assert_eq!(record_if_changed(&ledger, &newer, "{}").expect("r"), None);
        assert_eq!(ledger.list_runs(10).expect("l").len(), 3);
    }

    #[test]
    fn a_ledger_that_cannot_be_written_leaves_the_report_whole_and_says_why() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("l.sqlite3");
        std::fs::write(&path, b"not a database, 32 bytes long....").expect("write");
        let recorded = Ledger::open(&path).and_then(|l| record_if_changed(&l, &h200(), "{}"));
        let r = noted(h200(), recorded);
        let why = r.not_recorded.expect("the reason");
        assert!(why.contains("l.sqlite3"), "{why}");
        assert_eq!(r.report.lights, h200().lights, "the verdict is kept");
        assert!(r.report.notes.iter().any(|n| n
            .starts_with("This check was not recorded in the ledger")
            && n.contains(&why)));
        // Recorded (or found unchanged): no note, no reason.
        let ledger = Ledger::open(&dir.path().join("ok.sqlite3")).expect("ledger");
        let ok = noted(h200(), record_if_changed(&ledger, &h200(), "{}"));
        assert!(ok.not_recorded.is_none());
        assert_eq!(ok.report.notes, h200().notes);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_background_thread_and_what_it_starts_run_below_normal_and_the_caller_does_not() {
        let niceness = || {
            let out = std::process::Command::new("nice").output().expect("nice");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse::<i32>()
                .expect("a niceness")
        };
        let before = niceness();
        let inside = std::thread::spawn(move || {
            lower_this_threads_priority();
            niceness()
        })
        .join()
        .expect("thread");
        if before <= BACKGROUND_NICE {
            assert_eq!(inside, BACKGROUND_NICE, "from {before}");
        }
        assert_eq!(niceness(), before, "the calling thread kept its priority");
    }
}
