//! The evidence the live judgements stand on, gathered from the ledger and the machine: the
//! decision's [`Facts`] (`headroom_decide`), what the training run was measured to need for
//! contention, and which processes are Headroom's runs right now.

use crate::contention::Need;
use crate::decide::{
    EpochFact, Facts, FallbackFact, MlxFact, RemoteFact, RunFact, SlowLayerFact, SweepFact,
};
use crate::epochs::{EpochVerdict, EpochVerdictKind};
use crate::instrument::ProfileWindow;
use crate::ledger::{Ledger, RunKind, RunRecord, RunStatus};
use crate::outcome::WatchOutcome;
use crate::protocol::{EpochsRequest, PointStatus};
use crate::readiness::verdict::{under_rosetta, LightState};
use crate::readiness::Report;
use crate::CoreError;

/// How many recent runs are searched for evidence.
const RECENT: u32 = 200;

/// The recent runs the evidence is searched in, newest first (every host's): read once and
/// given to [`need_in`] and [`gather_in`], which a live judgement makes each tick.
pub fn recent_runs(ledger: &Ledger) -> Result<Vec<RunRecord>, CoreError> {
    ledger.list_runs(RECENT)
}

/// The pids recording runs that are still going on this host (their trees are the training).
pub fn training_pids(ledger: &Ledger) -> Result<Vec<u32>, CoreError> {
    let mut pids = ledger.running_owners(&crate::machine::hostname())?;
    pids.retain(|p| crate::child::process_alive(*p));
    Ok(pids)
}

/// The memory the training run was last measured to need on this host: the newest complete
/// MPS sweep's chosen batch (unified memory is host memory), else the newest wrapped `run`'s
/// peak or CPU sweep's chosen batch, whichever is newer. (A `--compare cpu` baseline follows its
/// MPS sweep, so the MPS sweep is preferred.)
pub fn measured_need(ledger: &Ledger) -> Result<Option<Need>, CoreError> {
    need_in(ledger, &recent_runs(ledger)?)
}

/// [`measured_need`] from runs already read ([`recent_runs`]); the ledger gives a sweep's points.
pub fn need_in(ledger: &Ledger, recent: &[RunRecord]) -> Result<Option<Need>, CoreError> {
    let host = crate::machine::hostname();
    let mut runs: Vec<&RunRecord> = recent
        .iter()
        .filter(|r| r.host == host && r.status == RunStatus::Complete)
        .collect();
    // Stable: MPS sweeps first, each group newest first.
    runs.sort_by_key(|r| !(r.kind == RunKind::Sweep && r.device == "mps"));
    for run in runs {
        match run.kind {
            RunKind::Sweep if matches!(run.device.as_str(), "cpu" | "mps") => {
                let Some(batch) = run.chosen_batch else {
                    continue;
                };
                let (_, points) = ledger.get_run(run.id)?;
                if let Some(bytes) = points
                    .iter()
                    .find(|p| p.batch == batch)
                    .and_then(|p| p.peak_bytes)
                {
                    return Ok(Some(Need {
                        bytes,
                        source: format!(
                            "the last sweep of {} on {} at batch {batch} (run {})",
                            run.workload, run.device, run.id
                        ),
                    }));
                }
            }
            RunKind::Run => {
                if let Some(bytes) = run.peak_bytes {
                    return Ok(Some(Need {
                        bytes,
                        source: format!("your last run (run {})", run.id),
                    }));
                }
            }
            _ => {}
        }
    }
    Ok(None)
}

/// Gathers the decision's facts from the ledger (this host's runs, newest first, no older than
/// `max_age_days`), the configuration and a contention sample. With `project`, the user's own
/// runs (wrapped runs and script sweeps) count only when they ran that project; the machine's
/// checks (doctor, built-in sweeps, remote checks) count whatever the project.
pub fn gather(
    ledger: &Ledger,
    config: &crate::config::Config,
    contention: Option<&crate::contention::ContentionReport>,
    project: Option<&str>,
) -> Result<Facts, CoreError> {
    gather_in(ledger, &recent_runs(ledger)?, config, contention, project)
}

/// [`gather`] from runs already read ([`recent_runs`]).
pub fn gather_in(
    ledger: &Ledger,
    recent: &[RunRecord],
    config: &crate::config::Config,
    contention: Option<&crate::contention::ContentionReport>,
    project: Option<&str>,
) -> Result<Facts, CoreError> {
    let host = crate::machine::hostname();
    let oldest = crate::time::days_ago(f64::from(config.decide.max_age_days));
    let mut runs: Vec<RunRecord> = recent
        .iter()
        .filter(|r| r.host == host && r.started_at.as_str() >= oldest.as_str())
        .cloned()
        .collect();
    if let Some(name) = project {
        let mut keep = Vec::with_capacity(runs.len());
        for r in runs {
            let owner = run_project(ledger, &r)?;
            if !owner.user_work || owner.project.as_deref() == Some(name) {
                keep.push(r);
            }
        }
        runs = keep;
    }
    let mut f = Facts {
        workload_kind: config.decide.main_job,
        cuda_parity_required: config.decide.cuda_parity_required,
        contention: contention.map(|c| c.reasons.clone()).unwrap_or_default(),
        ..Facts::default()
    };
    readiness_facts(&runs, &mut f);
    if let Some(m) = crate::sysmem::system_memory() {
        (f.ram_total, f.ram_available) = (Some(m.total), Some(m.available));
    }
    sweep_facts(ledger, &runs, &mut f)?;
    epoch_facts(ledger, &runs, &mut f)?;
    user_run_facts(&runs, &mut f);
    f.fallback = fallback_fact(&runs);
    f.slow_layer = slow_layer_fact(&runs);
    f.mlx = mlx_fact(&runs);
    f.numerics = numerics_fact(&runs);
    f.remotes = remote_facts(recent)?;
    Ok(f)
}

/// The batch the newest finished sweep of `project`'s own command chose, with that sweep's run
/// (what "Watch my training" runs at when no batch is given).
pub fn project_batch(ledger: &Ledger, project: &str) -> Result<Option<(u32, i64)>, CoreError> {
    let host = crate::machine::hostname();
    for r in ledger.list_runs(RECENT)? {
        // A sweep the remote ran (the migration's training step) chose for that machine.
        if r.kind != RunKind::Sweep || r.status != RunStatus::Complete || r.host != host {
            continue;
        }
        let Some(batch) = r.chosen_batch else {
            continue;
        };
        let owner = run_project(ledger, &r)?;
        // A device comparison's one-point baseline repeats its sweep's batch; the sweep chose.
        if owner.user_work && !owner.baseline && owner.project.as_deref() == Some(project) {
            return Ok(Some((batch, r.id)));
        }
    }
    Ok(None)
}

/// Whose work a run measured: the user's (a wrapped run, a script sweep) and for which project.
#[derive(Debug, Default)]
struct Owner {
    user_work: bool,
    project: Option<String>,
    /// The CPU baseline a device comparison ran at its sweep's batch (`baseline_of`).
    baseline: bool,
}

fn run_project(ledger: &Ledger, r: &RunRecord) -> Result<Owner, CoreError> {
    if !matches!(r.kind, RunKind::Run | RunKind::Sweep) {
        return Ok(Owner::default());
    }
    let req: serde_json::Value = ledger
        .request_json(r.id)?
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default();
    let script = r.kind == RunKind::Run
        || req.get("script").and_then(serde_json::Value::as_bool) == Some(true);
    let project = req
        .get("project")
        .or_else(|| req.get("tag").and_then(|t| t.get("project")))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    Ok(Owner {
        user_work: script,
        project,
        baseline: req.get("baseline_of").is_some_and(|b| !b.is_null()),
    })
}

/// Every host profile with its newest check (and its newest sweep) from the ledger.
fn remote_facts(runs: &[RunRecord]) -> Result<Vec<RemoteFact>, CoreError> {
    let hosts = crate::remote::Hosts::load()?;
    Ok(hosts
        .list()
        .map(|p| {
            let check = runs
                .iter()
                .find(|r| r.kind == RunKind::RemoteCheck && r.host == p.name);
            let sweep = runs.iter().find(|r| {
                r.kind == RunKind::Sweep && r.host == p.name && r.status == RunStatus::Complete
            });
            let mut detail = match check {
                None => "not checked yet (`headroom remote check`)".to_owned(),
                Some(c) => format!("{} at {}", c.note.clone().unwrap_or_default(), c.started_at),
            };
            if let Some(s) = sweep {
                detail.push_str(&format!(
                    "; sweep {} of {} on {}: batch {}",
                    s.id,
                    s.workload,
                    s.device,
                    s.chosen_batch
                        .map_or_else(|| "none".into(), |b| b.to_string())
                ));
            }
            RemoteFact {
                name: p.name.clone(),
                reachable: check.map(|c| c.status == RunStatus::Complete),
                detail,
            }
        })
        .collect())
}

/// The top operator of the newest wrapped run whose MPS operations were profiled.
/// The newest MLX comparison (`sweep --compare mlx`).
fn mlx_fact(runs: &[RunRecord]) -> Option<MlxFact> {
    complete(runs, RunKind::MlxCompare).find_map(|r| {
        let c: crate::mlx::MlxComparison = serde_json::from_value(r.report.clone()?).ok()?;
        Some(MlxFact {
            run_id: r.id,
            workload: c.workload,
            batch: c.batch,
            torch_device: c.torch_device,
            torch_samples_per_s: c.torch_samples_per_s,
            mlx_device: c.mlx_device,
            mlx_samples_per_s: c.mlx_samples_per_s,
        })
    })
}

fn slow_layer_fact(runs: &[RunRecord]) -> Option<SlowLayerFact> {
    // `headroom profile` on MPS: its slowest layer by forward time.
    let profiled = complete(runs, RunKind::Profile)
        .filter(|r| r.device == "mps")
        .find_map(|r| {
            let rep: crate::protocol::ProfileReport =
                serde_json::from_value(r.report.clone()?).ok()?;
            let top = rep
                .layers
                .iter()
                .max_by(|a, b| a.time_share.total_cmp(&b.time_share))?;
            Some(SlowLayerFact {
                run_id: r.id,
                name: top.name.clone(),
                share: top.time_share,
            })
        });
    // `run --profile-window` where the profiler recorded the device's time (CUDA's kernels;
    // on MPS it records the host's only): the operator with the most of it; else
    // `run --profile-ops`'s logged GPU times.
    let logged = runs
        .iter()
        .filter(|r| r.kind == RunKind::Run)
        .find_map(|r| {
            if let Some(top) = profile_window(r)
                .filter(ProfileWindow::has_device_time)
                .and_then(|w| w.top(1).into_iter().next())
            {
                return Some(SlowLayerFact {
                    run_id: r.id,
                    name: top.name,
                    share: top.share,
                });
            }
            let ops = r.report.as_ref()?.get("op_times")?.as_array()?.clone();
            let ms = |v: &serde_json::Value| v.get("gpu_ms").and_then(serde_json::Value::as_f64);
            let total: f64 = ops.iter().filter_map(ms).sum();
            let top = ops.first()?;
            if total <= 0.0 {
                return None;
            }
            Some(SlowLayerFact {
                run_id: r.id,
                name: top.get("name")?.as_str()?.to_owned(),
                share: ms(top)? / total,
            })
        });
    // The newer of the two.
    match (profiled, logged) {
        (Some(p), Some(l)) => Some(if p.run_id > l.run_id { p } else { l }),
        (p, l) => p.or(l),
    }
}

fn complete(runs: &[RunRecord], kind: RunKind) -> impl Iterator<Item = &RunRecord> {
    runs.iter()
        .filter(move |r| r.kind == kind && r.status == RunStatus::Complete)
}

fn readiness_facts(runs: &[RunRecord], f: &mut Facts) {
    f.apple_silicon = cfg!(all(target_os = "macos", target_arch = "aarch64"));
    let Some(report) = complete(runs, RunKind::Doctor)
        .find_map(|r| serde_json::from_value::<Report>(r.report.clone()?).ok())
    else {
        return;
    };
    f.apple_silicon = report.machine.apple_silicon;
    f.on_battery = report.conditions.power_source == Some(crate::readiness::PowerSource::Battery);
    f.rosetta = report
        .primary_python()
        .is_some_and(|p| under_rosetta(&report, p));
    if let Some(l) = report.lights.iter().find(|l| l.backend == "mps") {
        f.mps_ready = Some(l.state == LightState::Green || l.state == LightState::Yellow);
        f.mps_detail.clone_from(&l.reason);
    }
    f.mlx_installed = report
        .primary_python()
        .and_then(|p| p.facts.as_ref())
        .map(|facts| facts.mlx.is_some());
}

fn sweep_fact(
    ledger: &Ledger,
    run: &RunRecord,
    batch: u32,
) -> Result<Option<SweepFact>, CoreError> {
    let (_, points) = ledger.get_run(run.id)?;
    let oom_batches: Vec<u32> = points
        .iter()
        .filter(|p| p.status == PointStatus::Oom)
        .map(|p| p.batch)
        .collect();
    let largest_fit = points
        .iter()
        .filter(|p| p.status == PointStatus::Ok)
        .map(|p| p.batch)
        .max()
        .filter(|b| *b > batch);
    let energy = crate::summary::energy_tradeoff(&points, Some(batch));
    Ok(points
        .iter()
        .find(|p| p.batch == batch && p.status == PointStatus::Ok)
        .and_then(|p| {
            Some(SweepFact {
                run_id: run.id,
                device: String::new(),
                workload: run.workload.clone(),
                batch,
                step_ms: p.step_ms_p50?,
                samples_per_s: p.samples_per_s?,
                gpu_busy: p.gpu_busy,
                peak_bytes: p.peak_bytes,
                oom_batches,
                largest_fit,
                ci: p.ci_share(),
                energy,
            })
        }))
}

/// The newest MPS sweep's chosen batch against the newest CPU sweep of the same workload that
/// measured that batch; without an MPS sweep, the newest CPU sweep alone.
fn sweep_facts(ledger: &Ledger, runs: &[RunRecord], f: &mut Facts) -> Result<(), CoreError> {
    let sweeps: Vec<&RunRecord> = complete(runs, RunKind::Sweep).collect();
    // The user's own script swept on the accelerator with its CPU baseline speaks first.
    for run in &sweeps {
        let Some(c) = ledger
            .samples::<crate::summary::Comparison>(run.id, crate::ledger::COMPARISON_SAMPLE)?
            .into_iter()
            .next()
        else {
            continue;
        };
        let Some(base) = c.cpu_run_id.and_then(|id| runs.iter().find(|r| r.id == id)) else {
            continue;
        };
        if let (Some(accel), Some(cpu)) = (
            sweep_fact(ledger, run, c.batch)?,
            sweep_fact(ledger, base, c.batch)?,
        ) {
            f.mps = Some(SweepFact {
                device: c.device.clone(),
                ..accel
            });
            f.cpu = Some(cpu);
            return Ok(());
        }
    }
    if let Some(mps) = sweeps.iter().find(|r| r.device == "mps") {
        if let Some(batch) = mps.chosen_batch {
            f.mps = sweep_fact(ledger, mps, batch)?;
            for cpu in sweeps
                .iter()
                .filter(|r| r.device == "cpu" && r.workload == mps.workload)
            {
                if let Some(fact) = sweep_fact(ledger, cpu, batch)? {
                    f.cpu = Some(fact);
                    break;
                }
            }
        }
    }
    if f.cpu.is_none() {
        if let Some(cpu) = sweeps.iter().find(|r| r.device == "cpu") {
            if let Some(batch) = cpu.chosen_batch {
                f.cpu = sweep_fact(ledger, cpu, batch)?;
            }
        }
    }
    Ok(())
}

fn epoch_fact(ledger: &Ledger, run: &RunRecord) -> Result<Option<EpochFact>, CoreError> {
    let Some(v) = run
        .report
        .clone()
        .and_then(|r| serde_json::from_value::<EpochVerdict>(r).ok())
    else {
        return Ok(None);
    };
    let request = ledger
        .request_json(run.id)?
        .and_then(|j| serde_json::from_str::<EpochsRequest>(&j).ok());
    let release = request
        .as_ref()
        .map_or_else(|| "none".to_owned(), |r| r.release.name().to_owned());
    let source = format!(
        "`headroom epochs` run {} of {}{}",
        run.id,
        run.workload,
        request
            .map(|r| format!(" at batch {}", r.batch))
            .unwrap_or_default()
    );
    let epochs = ledger
        .samples::<serde_json::Value>(run.id, "epoch")
        .map(|s| u32::try_from(s.len()).unwrap_or(u32::MAX))
        .unwrap_or(0);
    Ok(Some(judged_epochs(run.id, source, &v, epochs, release)))
}

/// A memory-over-epochs fact from a verdict: growth of the judged measure (live tensors where
/// known, else the footprint), the cache's growth when that is the verdict.
fn judged_epochs(
    run_id: i64,
    source: String,
    v: &EpochVerdict,
    epochs: u32,
    release: String,
) -> EpochFact {
    let judged = v.live.as_ref().or(v.footprint.as_ref());
    EpochFact {
        run_id,
        source,
        leak: v.kind == EpochVerdictKind::LeakSuspected,
        growth: judged.map_or(0.0, |t| t.growth),
        epochs,
        release,
        slowing: v.slowing,
        throughput_change: v.throughput.as_ref().map(|t| t.growth),
        cache_growth: (v.kind == EpochVerdictKind::CacheGrowth)
            .then(|| v.cache.as_ref().map(|t| t.growth))
            .flatten(),
    }
}

/// Memory over epochs, newest first, from `headroom epochs` runs and from the user's own runs
/// (`headroom run`, three epochs or more): the newest judges, and the newest with a release
/// (`--release`, or a sweep over `release`) says whether a leak survives it.
fn epoch_facts(ledger: &Ledger, runs: &[RunRecord], f: &mut Facts) -> Result<(), CoreError> {
    let mut first = true;
    for run in runs {
        let fact = match run.kind {
            RunKind::Epochs if run.status == RunStatus::Complete => epoch_fact(ledger, run)?,
            RunKind::Run => user_epoch_fact(run),
            _ => None,
        };
        let Some(fact) = fact else {
            continue;
        };
        if first {
            f.epochs = Some(fact.clone());
            first = false;
        }
        if fact.release != "none" {
            f.leak_with_release = Some(fact);
            break;
        }
    }
    Ok(())
}

/// A user's run with its epochs judged (three or more): the verdict, with the release the
/// observer applied at each epoch end ("none" without one).
fn user_epoch_fact(run: &RunRecord) -> Option<EpochFact> {
    let (_, o) = user_runs(std::slice::from_ref(run)).next()?;
    if o.verdict.kind == EpochVerdictKind::TooShort {
        return None;
    }
    let release = o
        .observed
        .as_ref()
        .and_then(|x| x.release_forced.clone())
        .unwrap_or_else(|| "none".to_owned());
    let source = format!("your run {} (`{}`)", o.run_id, o.command);
    let epochs = u32::try_from(o.epochs.len()).unwrap_or(u32::MAX);
    Some(judged_epochs(o.run_id, source, &o.verdict, epochs, release))
}

/// The newest of the user's wrapped runs (`headroom run`) that finished or failed, with what it
/// recorded: what the app's Memory panel shows of the user's own training.
pub fn newest_user_run(ledger: &Ledger) -> Result<Option<WatchOutcome>, CoreError> {
    let runs = ledger.list_runs(RECENT)?;
    let newest = user_runs(&runs).next().map(|(_, o)| o);
    Ok(newest)
}

/// The user's wrapped runs (`headroom run`) that finished or failed, newest first, with what
/// they recorded; one the user stopped counts when its DataLoader stalled (a hang is stopped
/// by hand).
fn user_runs(runs: &[RunRecord]) -> impl Iterator<Item = (&RunRecord, WatchOutcome)> {
    runs.iter()
        .filter(|r| r.kind == RunKind::Run)
        .filter_map(|r| {
            Some((
                r,
                serde_json::from_value::<WatchOutcome>(r.report.clone()?).ok()?,
            ))
        })
        .filter(|(r, o)| {
            matches!(r.status, RunStatus::Complete | RunStatus::Failed)
                || (r.status == RunStatus::Interrupted && stalled(o))
        })
}

fn stalled(o: &WatchOutcome) -> bool {
    o.observed.as_ref().is_some_and(|x| !x.stalls.is_empty())
}

fn run_fact(out: &WatchOutcome) -> RunFact {
    let o = out.observed.as_ref();
    let loader = o.and_then(|o| o.loader.as_ref());
    RunFact {
        run_id: out.run_id,
        command: out.command.clone(),
        batch: out.batch,
        device: o.and_then(|o| o.device.clone()),
        steps: out.steps,
        samples_per_s: out.samples_per_s,
        step_ms: out.step_ms_p50,
        step_ci: out.step_cv.and_then(|cv| {
            crate::stats::ci_share(cv, usize::try_from(out.steps).unwrap_or(usize::MAX))
        }),
        data_share: out.data_share,
        copy_share: o.and_then(|o| o.copy_share),
        num_workers: loader.map(|l| l.num_workers),
        pin_memory: loader.map(|l| l.pin_memory),
        accumulation: o.and_then(|o| o.accumulation),
        autocast: o.map(|o| o.autocast.clone()).unwrap_or_default(),
        gpu_busy: out.gpu_busy,
        peak_bytes: out.peak_tree_bytes,
        peak_device_bytes: o.and_then(|o| o.peak_device_bytes),
        oom: o.and_then(|o| o.oom.clone()).or_else(|| {
            out.oom
                .then(|| "its output said it ran out of memory".to_owned())
        }),
        over_budget: out.budget_bytes.filter(|_| out.over_budget),
        checkpointing: o.is_some_and(|o| o.checkpointing),
        stall: o.and_then(|o| {
            o.stalls
                .iter()
                .max_by(|a, b| a.waited_s.total_cmp(&b.waited_s))
                .cloned()
        }),
        start_method: loader
            .and_then(|l| l.start_method.clone())
            .or_else(|| o.and_then(|o| o.start_method.clone())),
        disturbed: out
            .load
            .as_ref()
            .and_then(crate::load::PointLoad::disturbance),
        syncs_per_step: o.and_then(|o| o.syncs_per_step),
        sync_share: o.and_then(|o| o.sync_share),
        sync_site: o.and_then(|o| o.sync_site.clone()),
        worker_bytes: out
            .worker_bytes
            .filter(|_| loader.is_some_and(|l| l.num_workers > 0)),
    }
}

/// A command with the values a sweep varies taken out (numbers, and the words of a precision
/// or an on/off switch), so that runs of one script with other settings share it.
pub fn command_shape(command: &str) -> String {
    const VARIED: [&str; 12] = [
        "off", "on", "true", "false", "bf16", "f16", "fp16", "fp32", "float16", "bfloat16",
        "float32", "none",
    ];
    command
        .split_whitespace()
        .map(|arg| {
            // `--amp=bf16` keeps its name, loses its value.
            let (head, value) = arg.split_once('=').map_or(("", arg), |(h, v)| (h, v));
            let value = if VARIED.contains(&value.to_ascii_lowercase().as_str()) {
                "#".to_owned()
            } else {
                let mut out = String::new();
                let mut digits = false;
                for c in value.chars() {
                    if c.is_ascii_digit() {
                        if !digits {
                            out.push('#');
                        }
                        digits = true;
                    } else {
                        digits = false;
                        out.push(c);
                    }
                }
                out
            };
            if head.is_empty() {
                value
            } else {
                format!("{head}={value}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Pairs of the user's runs (newest first in `facts`) that measured one practice: the newest
/// run that has it, and the newest of the same command at the same batch on the same device
/// that has not, both with a throughput.
fn practice_pair(facts: &[RunFact], has: impl Fn(&RunFact) -> bool) -> Option<(RunFact, RunFact)> {
    let measured = |r: &&RunFact| r.samples_per_s.is_some() && r.oom.is_none();
    let with = facts.iter().filter(measured).find(|r| has(r))?;
    let shape = command_shape(&with.command);
    let without = facts.iter().filter(measured).find(|r| {
        !has(r)
            && r.batch == with.batch
            && r.device == with.device
            && command_shape(&r.command) == shape
    })?;
    Some((with.clone(), without.clone()))
}

/// The newest run and the run of the same command before it, when their backward calls per
/// optimizer step differ (a batch sweep, whose accumulation stays, is not a rescale).
fn rescale_pair(facts: &[RunFact]) -> Option<(RunFact, RunFact)> {
    let newest = facts
        .iter()
        .find(|r| r.effective_batch().is_some() && r.steps > 0)?;
    let shape = command_shape(&newest.command);
    let before = facts.iter().find(|r| {
        r.run_id != newest.run_id
            && r.steps > 0
            && r.effective_batch().is_some()
            && command_shape(&r.command) == shape
    })?;
    (newest.accumulation.unwrap_or(1) != before.accumulation.unwrap_or(1)
        && newest.effective_batch() != before.effective_batch())
    .then(|| (newest.clone(), before.clone()))
}

/// The user's runs decide where they exist: the newest that trained (or ran out of memory)
/// is [`Facts::run`], and the newest with three or more epochs judges memory over epochs in
/// place of a built-in `epochs` run.
fn user_run_facts(runs: &[RunRecord], f: &mut Facts) {
    f.run = user_runs(runs)
        .find(|(_, o)| o.steps > 0 || o.oom || o.over_budget || stalled(o))
        .map(|(_, o)| run_fact(&o));
    let all: Vec<RunFact> = user_runs(runs).map(|(_, o)| run_fact(&o)).collect();
    f.amp = practice_pair(&all, |r| !r.autocast.is_empty());
    f.checkpointing = practice_pair(&all, |r| r.checkpointing);
    f.rescale = rescale_pair(&all);
    let judged = user_runs(runs).find(|(_, o)| {
        o.epochs.len() >= 3 && o.verdict.kind != crate::epochs::EpochVerdictKind::TooShort
    });
    if let Some((_, o)) = judged {
        f.epochs = Some(judged_epochs(
            o.run_id,
            run_fact(&o).source(),
            &o.verdict,
            u32::try_from(o.epochs.len()).unwrap_or(u32::MAX),
            "none".into(),
        ));
    }
}

/// CPU-fallback operators in wrapped runs: which, in how many runs, over how many days.
/// A run's profiler window (`run --profile-window`), from its report.
fn profile_window(r: &RunRecord) -> Option<ProfileWindow> {
    let v = r.report.as_ref()?.get("observed")?.get("profile")?;
    serde_json::from_value::<ProfileWindow>(v.clone())
        .ok()
        .filter(|w| w.error.is_none())
}

/// The newest run that compared a model's numerics: a script's (`headroom numerics -- CMD`, the
/// observer's report inside the run's) or a built-in or TorchScript model's (its own run).
fn numerics_fact(runs: &[RunRecord]) -> Option<crate::decide::NumericsFact> {
    runs.iter().find_map(|r| {
        let report = r.report.as_ref()?;
        let v = match r.kind {
            RunKind::Run => report.get("observed")?.get("numerics")?,
            RunKind::Numerics => report,
            _ => return None,
        };
        let n: headroom_model::numerics::NumericsReport = serde_json::from_value(v.clone()).ok()?;
        n.error.is_none().then(|| crate::decide::NumericsFact {
            run_id: r.id,
            device: n.device.clone(),
            dtype: n.dtype.clone(),
            within: n.within(),
            verdict: n.verdict(),
        })
    })
}

fn fallback_fact(runs: &[RunRecord]) -> Option<FallbackFact> {
    let with: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.kind == RunKind::Run && r.fallback == Some(true))
        .collect();
    let newest = with.first()?;
    let oldest = with.last()?;
    let mut ops: Vec<String> = with
        .iter()
        .filter_map(|r| r.report.as_ref()?.get("fallback_ops")?.as_array().cloned())
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    ops.sort();
    ops.dedup();
    Some(FallbackFact {
        ops,
        days: crate::time::days_between(&oldest.started_at, &newest.started_at).unwrap_or(0.0),
        runs: u32::try_from(with.len()).unwrap_or(u32::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::command_shape;
    use crate::ledger::{Ledger, NewRun, RunKind, RunStatus};
    use crate::protocol::SweepSummary;

    /// A finished sweep of this host that recommended `batch`, with `request` as its request.
    fn sweep(ledger: &Ledger, batch: u32, request: &serde_json::Value) -> i64 {
        let id = ledger
            .begin_run(&NewRun {
                kind: RunKind::Sweep,
                host: crate::machine::hostname(),
                device: "cpu".into(),
                device_name: "cpu".into(),
                workload: "python train.py --batch-size {batch}".into(),
                dtype: None,
                mode: None,
                libtorch: "2.11.0".into(),
                git_commit: None,
                git_dirty: None,
                budget_bytes: Some(1 << 30),
                fallback: None,
                request_json: request.to_string(),
                owner_pid: None,
            })
            .expect("begin");
        let summary = SweepSummary {
            best_batch: Some(batch),
            best_samples_per_s: Some(1000.0),
            knee_batch: Some(batch),
            max_fit_batch: Some(batch),
            predicted_fit_batch: None,
            first_failing_batch: None,
            limit: "list".into(),
            recommended_batch: Some(batch),
            reason: "test".into(),
            peak_bytes_at_recommended: Some(1 << 20),
            still_rising: false,
            uncertain: None,
            energy: None,
            headline: None,
            caution_line: None,
        };
        ledger
            .finish_run(id, RunStatus::Complete, Some(&summary), None)
            .expect("finish");
        id
    }

    #[test]
    fn the_batch_chosen_here_is_the_newest_project_sweep_not_a_baseline() {
        let dir = tempfile::tempdir().expect("dir");
        let ledger = Ledger::open(&dir.path().join("ledger.sqlite")).expect("ledger");
        let own = |extra: serde_json::Value| {
            let mut r = serde_json::json!({"script": true, "project": "p"});
            r.as_object_mut()
                .expect("object")
                .extend(extra.as_object().expect("object").clone());
            r
        };
        assert_eq!(super::project_batch(&ledger, "p").expect("read"), None);
        let first = sweep(&ledger, 64, &own(serde_json::json!({})));
        sweep(
            &ledger,
            512,
            &serde_json::json!({"script": true, "project": "q"}),
        );
        assert_eq!(
            super::project_batch(&ledger, "p").expect("read"),
            Some((64, first))
        );
        // A device comparison: its sweep on the accelerator, then the CPU at another batch.
        let accel = sweep(&ledger, 128, &own(serde_json::json!({"devices": ["mps"]})));
        sweep(&ledger, 32, &own(serde_json::json!({"baseline_of": accel})));
        assert_eq!(
            super::project_batch(&ledger, "p").expect("read"),
            Some((128, accel))
        );
    }

    #[test]
    fn a_commands_shape_drops_the_values_a_sweep_varies() {
        let a = command_shape("python train.py --batch-size 32 --accum 1 --amp=bf16 --ckpt off");
        let b = command_shape("python train.py --batch-size 64 --accum 4 --amp=fp32 --ckpt on");
        assert_eq!(a, b);
        assert_eq!(
            a,
            "python train.py --batch-size # --accum # --amp=# --ckpt #"
        );
        assert_ne!(
            a,
            command_shape("python other.py --batch-size 32 --accum 1 --amp=bf16 --ckpt off")
        );
        assert_eq!(command_shape("python t2.py"), "python t#.py");
    }
}
