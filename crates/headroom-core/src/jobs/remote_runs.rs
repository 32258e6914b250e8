//! Training on a remote host that outlives this machine's connection: `headroom remote run`
//! starts the project's command there detached (`headroom run --detach`, in its own session,
//! under `caffeinate -i` on a Mac), `remote runs` lists them, `remote attach` follows one,
//! `remote stop` ends one with its process group. What the runs there did is mirrored into this
//! ledger under the host's name as it is read — each run once, each epoch once — so a run that
//! ended while this laptop slept appears complete at the next look.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::jobs::detached::{DetachedMeta, DetachedRun, DetachedState};
use crate::ledger::{Ledger, NewRun, RunKind, RunStatus};
use crate::remote::check::{self, sh_quote};
use crate::remote::HostProfile;
use crate::CoreError;

/// What `script` (a command line there) prints on host `p`, over ssh; a failure in words with
/// what to do (ssh's own failures as `remote check` words them).
fn there(p: &HostProfile, script: &str, timeout: Duration) -> Result<String, CoreError> {
    let mut c = check::ssh_command(p, timeout)?;
    c.arg(&p.name).arg(script);
    let f = crate::child::run_within(&mut c, timeout + Duration::from_secs(30)).map_err(|e| {
        CoreError::InvalidInput(format!("cannot run ssh: {e}; install OpenSSH's client"))
    })?;
    if f.success() {
        return Ok(f.stdout);
    }
    // ssh exits 255 on its own errors (unreachable, refused, keys); anything else is the
    // command's there.
    let ssh_failed = f.timed_out() || f.status.and_then(|s| s.code()) == Some(255);
    let message = if ssh_failed {
        let c = check::classify(p, &f.stderr, f.timed_out(), timeout);
        format!("{}: {}", c.message, c.fix)
    } else {
        explain(p, &f.stderr)
    };
    Err(CoreError::InvalidInput(message))
}

/// A failure of Headroom's command there, in words, with what to do.
fn explain(p: &HostProfile, stderr: &str) -> String {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let lower = stderr.to_lowercase();
    // The folder first: the shell's "cd: headroom-projects/train: No such file or directory"
    // names Headroom's folder, not a missing Headroom.
    if lower.contains("can't cd") || lower.contains("cannot cd") || lower.contains("cd: ") {
        format!(
            "the project's folder is gone on {} ({last}): run `headroom remote migrate {} --project P --step project`",
            p.name, p.name
        )
    } else if lower.contains("command not found")
        || (lower.contains("no such file or directory") && lower.contains("headroom"))
    {
        format!(
            "Headroom is missing on {} ({last}): install it there with `headroom remote migrate {} --project P --step headroom`",
            p.name, p.name
        )
    } else if lower.contains("no space left") {
        format!(
            "the disk on {} is full ({last}): free space there, then start it again",
            p.name
        )
    } else if lower.contains("no detached run") {
        format!(
            "{last} (on {}: `headroom remote runs {}` lists them)",
            p.name, p.name
        )
    } else {
        format!("on {}: {last}", p.name)
    }
}

/// A project's training started there: the run, the device, the command and its folder.
#[derive(Debug, Clone)]
pub struct Started {
    pub meta: DetachedMeta,
    pub device: &'static str,
    pub argv: Vec<String>,
    pub dir: String,
}

/// Starts project `project`'s training on host `p` detached (the migration's steps up to the
/// project must have passed; a command with `{batch}` needs `batch`), `release` its release
/// policy at epoch ends.
pub fn start_project(
    p: &HostProfile,
    project: &str,
    batch: Option<u32>,
    release: Option<crate::protocol::Release>,
    timeout: Duration,
) -> Result<Started, CoreError> {
    if batch == Some(0) {
        return Err(CoreError::InvalidInput(
            "batch 0: give a batch of 1 or more".into(),
        ));
    }
    let proj = crate::project::get(project)?;
    let m = crate::jobs::migrate::Migration::load_or_new(&p.name, project, None)?;
    m.gate(crate::jobs::migrate::Step::Training)?;
    if proj.has("batch") && batch.is_none() {
        return Err(CoreError::InvalidInput(
            "the project's command takes {batch}: give the batch to train at".into(),
        ));
    }
    let device = device_there(p, timeout)?;
    let argv = crate::jobs::migrate::remote_argv(&proj, batch, device);
    let mut run_args = Vec::new();
    if let Some(b) = batch {
        run_args.extend(["--batch".to_owned(), b.to_string()]);
    }
    if let Some(r) = release {
        run_args.extend(["--release".to_owned(), r.name().to_owned()]);
    }
    let meta = start(p, &m.remote_dir, &run_args, &argv, timeout)?;
    Ok(Started {
        meta,
        device,
        argv,
        dir: m.remote_dir,
    })
}

/// A run just started, as [`mirror`] takes it.
pub fn just_started(meta: &DetachedMeta) -> DetachedRun {
    DetachedRun {
        meta: meta.clone(),
        state: DetachedState::Running,
        status: None,
        last_line: None,
        result: None,
        note: None,
    }
}

/// The batch a run of `project` on `host` trains at: the one `given`; else, for a command that
/// takes `{batch}`, the batch its migration there chooses
/// ([`crate::jobs::migrate::Migration::continue_batch`]), with where it came from; `None` for a
/// command that sets its own.
pub fn batch_for(
    host: &str,
    project: &str,
    given: Option<u32>,
    ledger: Option<&crate::ledger::Ledger>,
) -> Result<(Option<u32>, Option<String>), CoreError> {
    if given.is_some() || !crate::project::get(project)?.has("batch") {
        return Ok((given, None));
    }
    let m = crate::jobs::migrate::Migration::load_or_new(host, project, None)?;
    // A host the project has not reached yet says so first.
    m.gate(crate::jobs::migrate::Step::Training)?;
    let (b, why) = ledger.and_then(|l| m.continue_batch(l)).ok_or_else(|| {
        CoreError::InvalidInput(format!(
            "the project's command takes {{batch}} and no sweep of it chose one: give the batch, or sweep it there (`headroom remote migrate {host} --project {project} --step training`) or here"
        ))
    })?;
    Ok((Some(b), Some(format!("batch {b}, {why}"))))
}

/// "Continue on the remote host": the project started on `p`, detached, at the batch
/// [`batch_for`] chooses; with that batch and where it came from, for the notification.
pub fn continue_project(
    p: &HostProfile,
    project: &str,
    ledger: Option<&crate::ledger::Ledger>,
    timeout: Duration,
) -> Result<(Started, Option<String>), CoreError> {
    let (batch, why) = batch_for(&p.name, project, None, ledger)?;
    Ok((start_project(p, project, batch, None, timeout)?, why))
}

/// Where "Continue on the remote host" goes for a project: the first host (in `hosts`' order)
/// whose migration of it (`migration` finds it) passed every step a detached run needs, else
/// the host whose migration got furthest with why it is not ready (the wizard opens there at
/// the first step missing), else none.
pub fn host_to_continue_on(
    hosts: &[HostProfile],
    migration: &dyn Fn(&str) -> Option<crate::jobs::migrate::Migration>,
) -> ContinueOn {
    use crate::jobs::migrate::Step;
    let mut furthest: Option<(usize, String, String)> = None;
    for h in hosts {
        let Some(m) = migration(&h.name) else {
            continue;
        };
        match m.gate(Step::Training) {
            Ok(()) => return ContinueOn::Ready(Box::new(h.clone())),
            Err(why) => {
                let passed = Step::ALL
                    .iter()
                    .take_while(|s| m.steps.get(s).is_some_and(|r| r.passed))
                    .count();
                if furthest.as_ref().is_none_or(|(n, _, _)| passed > *n) {
                    furthest = Some((passed, h.name.clone(), why.to_string()));
                }
            }
        }
    }
    match furthest {
        Some((_, host, why)) => ContinueOn::NotYet { host, why },
        None => ContinueOn::Nowhere,
    }
}

/// Where a project's training can continue ([`host_to_continue_on`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ContinueOn {
    /// This host has the project, Headroom and the environment: start it there.
    Ready(Box<HostProfile>),
    /// The migration to this host got furthest, and why it is not ready.
    NotYet { host: String, why: String },
    /// No host has begun a migration of it.
    Nowhere,
}

/// The device a project trains on there: MPS on Apple Silicon, else the CPU (`uname` asked).
pub fn device_there(p: &HostProfile, timeout: Duration) -> Result<&'static str, CoreError> {
    let text = there(p, "uname -s; uname -m", timeout)?;
    let mut lines = text.lines();
    let (os, arch) = crate::jobs::migrate::rust_platform(
        lines.next().unwrap_or("").trim(),
        lines.next().unwrap_or("").trim(),
    );
    Ok(crate::jobs::migrate::remote_device(&os, &arch))
}

/// Starts `argv` detached in `dir` on host `p` under `headroom run` with `run_args` (`--batch
/// 64`, `--release both`); returns at once with the run's meta there.
pub fn start(
    p: &HostProfile,
    dir: &str,
    run_args: &[String],
    argv: &[String],
    timeout: Duration,
) -> Result<DetachedMeta, CoreError> {
    let quoted = |v: &[String]| v.iter().map(|a| sh_quote(a)).collect::<Vec<_>>().join(" ");
    let script = format!(
        "cd {} && {} run --detach --json {} -- {}",
        sh_quote(dir),
        sh_quote(&check::remote_headroom(p)),
        quoted(run_args),
        quoted(argv)
    );
    let text = there(p, &script, timeout)?;
    serde_json::from_str(&text).map_err(|_| {
        CoreError::InvalidInput(format!(
            "{} gave no run id back (`{}`): is its Headroom this version? update it with `headroom remote migrate {} --project P --step headroom`",
            p.name,
            text.lines().last().unwrap_or("").trim(),
            p.name
        ))
    })
}

/// The detached runs on host `p`, newest first.
pub fn list(p: &HostProfile, timeout: Duration) -> Result<Vec<DetachedRun>, CoreError> {
    let script = format!("{} runs --json", sh_quote(&check::remote_headroom(p)));
    let text = there(p, &script, timeout)?;
    serde_json::from_str(&text).map_err(|e| {
        CoreError::InvalidInput(format!(
            "{} listed its runs in a form this Headroom cannot read ({e}): update Headroom there",
            p.name
        ))
    })
}

/// Ends run `id` on host `p` and its whole process group there.
pub fn stop(p: &HostProfile, id: &str, timeout: Duration) -> Result<DetachedRun, CoreError> {
    let script = format!(
        "{} runs stop {} --json",
        sh_quote(&check::remote_headroom(p)),
        sh_quote(id)
    );
    let text = there(p, &script, timeout + Duration::from_secs(30))?;
    serde_json::from_str(&text).map_err(CoreError::from)
}

/// The ssh command that follows run `id` there live (its output on this one's stdout).
pub fn follow_command(
    p: &HostProfile,
    id: &str,
    tail: Option<u64>,
    timeout: Duration,
) -> Result<std::process::Command, CoreError> {
    let mut c = check::ssh_command(p, timeout)?;
    let tail = tail.map_or_else(String::new, |n| format!(" --tail {n}"));
    c.arg(&p.name).arg(format!(
        "{} runs follow {}{tail}",
        sh_quote(&check::remote_headroom(p)),
        sh_quote(id)
    ));
    Ok(c)
}

/// The tag a mirrored run carries in its request: which run there it is.
const DETACHED_TAG: &str = "detached";

/// The local rows that mirror runs of host `host`: id there → (row here, its status).
fn mirrored(ledger: &Ledger, host: &str) -> Result<BTreeMap<String, (i64, RunStatus)>, CoreError> {
    let mut out = BTreeMap::new();
    for r in ledger.list_runs(100_000)? {
        if r.host != host || r.kind != RunKind::Run {
            continue;
        }
        let Some(req) = ledger.request_json(r.id)? else {
            continue;
        };
        let id = serde_json::from_str::<serde_json::Value>(&req)
            .ok()
            .and_then(|v| v["tag"][DETACHED_TAG].as_str().map(str::to_owned));
        if let Some(id) = id {
            out.entry(id).or_insert((r.id, r.status));
        }
    }
    Ok(out)
}

/// Copies what `runs` on host `host` did into `ledger`: a row per run (made at the first look),
/// each epoch once (as it comes), and the outcome once it ended. Returns each run's row here,
/// in the order of `runs`. Looking again adds nothing twice.
pub fn mirror(ledger: &Ledger, host: &str, runs: &[DetachedRun]) -> Result<Vec<i64>, CoreError> {
    Ok(mirror_noting_ends(ledger, host, runs)?.rows)
}

/// What a mirror did: each run's row here, and the runs (indices into the runs mirrored) that
/// the ledger had as running and that ended since — each told once, whichever look (the
/// follow-up, the panel, the CLI) first saw the end.
#[derive(Debug, Default)]
pub struct Mirrored {
    pub rows: Vec<i64>,
    pub ended: Vec<usize>,
}

/// [`mirror`], saying which runs ended since the ledger last saw them running.
pub fn mirror_noting_ends(
    ledger: &Ledger,
    host: &str,
    runs: &[DetachedRun],
) -> Result<Mirrored, CoreError> {
    let known = mirrored(ledger, host)?;
    let mut out = Mirrored {
        rows: Vec::with_capacity(runs.len()),
        ended: Vec::new(),
    };
    for (i, r) in runs.iter().enumerate() {
        let (id, status) = match known.get(&r.meta.id) {
            Some(k) => *k,
            None => (begin(ledger, host, r)?, RunStatus::Running),
        };
        for e in r.epochs() {
            ledger.add_sample(id, 100_000 + e.epoch, "epoch", e)?;
        }
        if status == RunStatus::Running && r.state != DetachedState::Running {
            finish(ledger, host, id, r)?;
            // A run first seen already ended was never seen running here: nothing to tell.
            if known.contains_key(&r.meta.id) {
                out.ended.push(i);
            }
        }
        out.rows.push(id);
    }
    Ok(out)
}

/// The hosts with runs still running as this ledger last saw them: what a follow-up asks.
pub fn hosts_in_flight(ledger: &Ledger) -> Result<Vec<String>, CoreError> {
    let here = crate::machine::hostname();
    let mut hosts = Vec::new();
    for r in ledger.list_runs(100_000)? {
        if r.status != RunStatus::Running || r.kind != RunKind::Run || r.host == here {
            continue;
        }
        let detached = ledger
            .request_json(r.id)?
            .and_then(|q| serde_json::from_str::<serde_json::Value>(&q).ok())
            .is_some_and(|v| v["tag"][DETACHED_TAG].is_string());
        if detached && !hosts.contains(&r.host) {
            hosts.push(r.host);
        }
    }
    hosts.sort();
    Ok(hosts)
}

/// What a follow-up of the runs in flight found: those still running on each host, those
/// that ended since the last look (each said once), and the hosts it could not ask.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FollowUp {
    pub running: BTreeMap<String, u32>,
    pub ended: Vec<(String, DetachedRun)>,
    pub unreachable: Vec<(String, String)>,
}

/// Asks every host with runs in flight ([`hosts_in_flight`]) how they stand, mirrors what
/// they did into `ledger`, and says which ended since the last look. `profile` finds a host's
/// profile (a host removed since is skipped).
pub fn follow_up(
    ledger: &Ledger,
    profile: &dyn Fn(&str) -> Option<HostProfile>,
    timeout: Duration,
) -> Result<FollowUp, CoreError> {
    let mut out = FollowUp::default();
    for host in hosts_in_flight(ledger)? {
        let Some(p) = profile(&host) else { continue };
        let found = match list(&p, timeout) {
            Ok(f) => f,
            Err(e) => {
                out.unreachable.push((host, e.to_string()));
                continue;
            }
        };
        let m = mirror_noting_ends(ledger, &host, &found)?;
        out.ended
            .extend(m.ended.iter().map(|&i| (host.clone(), found[i].clone())));
        let running = found
            .iter()
            .filter(|r| r.state == DetachedState::Running)
            .count();
        out.running
            .insert(host, u32::try_from(running).unwrap_or(u32::MAX));
    }
    Ok(out)
}

/// How long a call about the runs on a host may wait for the connection.
pub const RUNS_TIMEOUT: Duration = Duration::from_secs(15);

/// One look at the runs in flight ([`follow_up`]) with this user's ledger and host profiles:
/// what the background follow-up of the menu bar does every minute.
pub fn follow_up_now() -> Result<FollowUp, CoreError> {
    let ledger = crate::jobs::open_ledger()?;
    let hosts = crate::remote::Hosts::load()?;
    follow_up(&ledger, &|name| hosts.get(name).ok().cloned(), RUNS_TIMEOUT)
}

/// The notification of a run on `host` that ended: how, its command, where it stood, its last
/// line.
pub fn ended_notice(host: &str, r: &DetachedRun) -> (String, String) {
    (
        format!("Headroom: the run on {host} ended {}", r.state.as_str()),
        format!(
            "{}: {}{}",
            r.meta.command.join(" "),
            r.summary(),
            r.last_line
                .as_deref()
                .map_or_else(String::new, |l| format!(" · {l}"))
        ),
    )
}

/// "Continue on the remote host" (the contention notice's button) for `project`, the project
/// the decision is judged from: its training started, detached, on the first host its
/// migration reached. `Ok` is the notification that says where it went; `Err` says why it could
/// not (no project, no host ready: the Remote panel's wizard then opens at the first step
/// missing).
pub fn continue_chosen(project: Option<&str>) -> Result<(String, String), String> {
    let project = project.ok_or_else(|| "no project chosen".to_owned())?;
    let hosts = crate::remote::Hosts::load()
        .map_err(|e| e.to_string())?
        .list()
        .cloned()
        .collect::<Vec<_>>();
    let found = host_to_continue_on(&hosts, &|name| {
        crate::jobs::migrate::Migration::load_or_new(name, project, None).ok()
    });
    let p = match found {
        ContinueOn::Ready(p) => *p,
        ContinueOn::NotYet { host, why } => return Err(format!("{host}: {why}")),
        ContinueOn::Nowhere => return Err("no host has the project yet".into()),
    };
    let ledger = crate::jobs::open_ledger().ok();
    let (s, batch) = continue_project(&p, project, ledger.as_ref(), RUNS_TIMEOUT)
        .map_err(|e| format!("{}: {e}", p.name))?;
    // Mirrored into the ledger at once: the notification names the run there and here.
    let run = just_started(&s.meta);
    let row = ledger.as_ref().and_then(|l| {
        mirror_noting_ends(l, &p.name, std::slice::from_ref(&run))
            .ok()
            .and_then(|m| m.rows.first().copied())
    });
    Ok((
        format!("Headroom: {project} continues on {}", p.name),
        format!(
            "`{}` runs there on {}{}, detached: it goes on if this Mac sleeps (run {}{})",
            s.argv.join(" "),
            s.device,
            batch.map_or_else(String::new, |b| format!(" at {b}")),
            s.meta.id,
            row.map_or_else(String::new, |r| format!(", run {r} here"))
        ),
    ))
}

fn begin(ledger: &Ledger, host: &str, r: &DetachedRun) -> Result<i64, CoreError> {
    let command = r.meta.command.join(" ");
    let device = r
        .result
        .as_ref()
        .and_then(|o| o.observed.as_ref())
        .and_then(|o| o.device.clone())
        .unwrap_or_else(|| "unknown".into());
    ledger.begin_run(&NewRun {
        kind: RunKind::Run,
        host: host.to_owned(),
        device,
        device_name: command.chars().take(120).collect(),
        workload: command.chars().take(200).collect(),
        dtype: None,
        mode: None,
        libtorch: r
            .result
            .as_ref()
            .and_then(|o| o.torch_version.clone())
            .unwrap_or_else(|| "unknown".into()),
        git_commit: None,
        git_dirty: None,
        budget_bytes: None,
        fallback: None,
        request_json: serde_json::json!({
            "command": command,
            "tag": {
                DETACHED_TAG: r.meta.id,
                "project": r.meta.project,
                "dir": r.meta.dir,
                "started_there": r.meta.started_at,
            },
        })
        .to_string(),
        // Not this machine's process: never closed as an orphan here.
        owner_pid: None,
    })
}

fn finish(ledger: &Ledger, host: &str, id: i64, r: &DetachedRun) -> Result<(), CoreError> {
    let status = match r.state {
        DetachedState::Complete => RunStatus::Complete,
        DetachedState::Failed => RunStatus::Failed,
        _ => RunStatus::Interrupted,
    };
    match &r.result {
        Some(o) => {
            if let Some(d) = o.observed.as_ref().and_then(|s| s.device.as_deref()) {
                ledger.set_device(id, d)?;
            }
            if let Some(v) = &o.torch_version {
                ledger.set_libtorch(id, v)?;
            }
            ledger.finish_watch(
                id,
                status,
                o,
                o.batch,
                o.peak_tree_bytes,
                o.fallback,
                &format!(
                    "detached run {} on {host} (run {} there): {}",
                    r.meta.id, o.run_id, o.verdict.reason
                ),
            )
        }
        None => ledger.set_status(
            id,
            status,
            &format!(
                "detached run {} on {host}: {}",
                r.meta.id,
                r.note.as_deref().unwrap_or("ended without a result")
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::migrate::{Migration, Step, StepResult};

    fn host(name: &str) -> HostProfile {
        serde_json::from_value(serde_json::json!({"name": name, "host": "127.0.0.1"}))
            .expect("a profile")
    }

    fn migrated(host: &str, upto: Step) -> Migration {
        let mut m = Migration::new(host, "p", None);
        for s in Step::ALL.into_iter().take_while(|s| *s <= upto) {
            m.steps.insert(
                s,
                StepResult {
                    step: s,
                    passed: true,
                    detail: String::new(),
                    fix: None,
                    at: String::new(),
                    seconds: 0.0,
                    runs: Vec::new(),
                },
            );
        }
        m
    }

    #[test]
    fn continuing_goes_to_a_host_the_project_reached_else_to_the_wizard_where_it_got_furthest() {
        let hosts = [host("a"), host("b"), host("c")];
        // b has the project there: it is where the training continues.
        let ready = |name: &str| match name {
            "a" => Some(migrated("a", Step::Key)),
            "b" => Some(migrated("b", Step::Project)),
            _ => None,
        };
        assert!(
            matches!(host_to_continue_on(&hosts, &ready), ContinueOn::Ready(h) if h.name == "b")
        );
        // None reached it: the wizard, on the host that got furthest, says the step missing.
        let partial = |name: &str| match name {
            "a" => Some(migrated("a", Step::Key)),
            "c" => Some(migrated("c", Step::Check)),
            _ => None,
        };
        let ContinueOn::NotYet { host: h, why } = host_to_continue_on(&hosts, &partial) else {
            panic!("no host is ready");
        };
        assert_eq!(h, "c");
        assert!(why.contains("needs step headroom"), "{why}");
        // No migration at all: nowhere.
        assert_eq!(host_to_continue_on(&hosts, &|_| None), ContinueOn::Nowhere);
    }
    use crate::jobs::detached::{DetachedMeta, DetachedStatus};

    fn run(id: &str, state: DetachedState, epochs: u32) -> DetachedRun {
        let sample = |epoch| crate::epochs::EpochSample {
            epoch,
            live_bytes: None,
            cache_bytes: None,
            footprint_bytes: Some(1 << 20),
            seconds: 1.0,
            samples_per_s: Some(100.0),
            cache_before_bytes: None,
        };
        DetachedRun {
            meta: DetachedMeta {
                id: id.into(),
                command: vec![".venv/bin/python".into(), "train.py".into()],
                dir: "/home/u/p".into(),
                project: Some("p".into()),
                started_at: "2026-12-05T01:00:00Z".into(),
                pid: 4242,
                host: "there".into(),
            },
            state,
            status: Some(DetachedStatus {
                run_id: 1,
                seconds: 3.0,
                steps: 30,
                epochs: (1..=epochs).map(sample).collect(),
                tree_bytes: Some(1 << 20),
                device_peak_bytes: None,
                command_pid: Some(4243),
                updated_at: "2026-12-05T01:00:03Z".into(),
            }),
            last_line: Some("epoch 2".into()),
            result: None,
            note: None,
        }
    }

    #[test]
    fn mirrored_runs_land_once_with_each_epoch_once_and_are_in_flight_until_they_end() {
        let dir = tempfile::tempdir().expect("tmp");
        let ledger = Ledger::open(&dir.path().join("l.sqlite3")).expect("ledger");
        // Seen running with two epochs, then again with three: one row, three epochs.
        let rows = mirror(&ledger, "box", &[run("a-1", DetachedState::Running, 2)]).expect("m");
        let again = mirror(&ledger, "box", &[run("a-1", DetachedState::Running, 3)]).expect("m");
        assert_eq!(rows, again);
        let epochs: Vec<serde_json::Value> = ledger.samples(rows[0], "epoch").expect("s");
        assert_eq!(epochs.len(), 3);
        assert_eq!(hosts_in_flight(&ledger).expect("f"), ["box"]);
        // Ended without a result (killed there): interrupted, with why; no longer in flight,
        // and a later look changes nothing.
        let mut gone = run("a-1", DetachedState::Interrupted, 3);
        gone.note = Some("it ended without a result".into());
        // The end is told once, by whichever look saw it first.
        let first = mirror_noting_ends(&ledger, "box", &[gone.clone()]).expect("m");
        assert_eq!(first.ended, [0]);
        let later = mirror_noting_ends(&ledger, "box", &[gone]).expect("m");
        assert!(later.ended.is_empty());
        // A run first seen already ended was never running here: nothing to tell.
        let new = mirror_noting_ends(&ledger, "box", &[run("b-2", DetachedState::Complete, 1)])
            .expect("m");
        assert!(new.ended.is_empty());
        let b2 = new.rows[0];
        assert_eq!(ledger.get_run(b2).expect("b").0.status, RunStatus::Complete);
        let (rec, _) = ledger.get_run(rows[0]).expect("run");
        assert_eq!(rec.status, RunStatus::Interrupted);
        assert!(rec.note.unwrap_or_default().contains("without a result"));
        assert!(hosts_in_flight(&ledger).expect("f").is_empty());
        assert_eq!(ledger.list_runs(10).expect("l").len(), 2);
    }
}
