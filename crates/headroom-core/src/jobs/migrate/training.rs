//! Step 6, the training there: the project run with `headroom run` on the remote host (or swept
//! there), recorded in this ledger under the host's name.

use super::*;

/// How long the training step lets the project's command run there: long enough for its first
/// epochs and a settled step time, short of a whole training run.
pub const TRAINING_SECONDS: u64 = 120;

/// The project's command as the remote runs it: `{batch}` and `{device}` filled in, and
/// `python`/`python3` (or the project's own interpreter here) as the environment the project
/// step made there.
/// With `batch` `None`, `{batch}` is left for a sweep there to fill.
pub fn remote_argv(project: &Project, batch: Option<u32>, device: &str) -> Vec<String> {
    let mut argv = crate::project::fill(&project.command, batch, Some(device));
    if let Some(first) = argv.first_mut() {
        if matches!(first.as_str(), "python" | "python3")
            || project
                .python
                .as_deref()
                .is_some_and(|p| Path::new(first.as_str()) == p)
        {
            *first = ".venv/bin/python".into();
        }
    }
    argv
}

/// The device the remote's training runs on (`os`, `arch` in Rust's names): MPS on Apple
/// Silicon, else the CPU.
pub fn remote_device(os: &str, arch: &str) -> &'static str {
    if os == "macos" && arch == "aarch64" {
        "mps"
    } else {
        "cpu"
    }
}

/// What the remote runs, in Rust's names, and its login folder: `uname -s`, `uname -m` and
/// `$HOME` asked over ssh.
pub(super) fn remote_platform(
    p: &HostProfile,
    timeout: Duration,
) -> Result<(String, String, String), Outcome> {
    match remote(
        p,
        "uname -s; uname -m; echo \"$HOME\"",
        None,
        timeout + Duration::from_secs(10),
        timeout,
    ) {
        Ok(f) if f.success() => {
            let mut lines = f.stdout.lines();
            let (os, arch) = rust_platform(lines.next().unwrap_or(""), lines.next().unwrap_or(""));
            Ok((os, arch, lines.next().unwrap_or("").trim().to_owned()))
        }
        Ok(f) => Err(fail(
            format!(
                "cannot ask {} what it runs: {}",
                p.name,
                last_line(&f.stderr)
            ),
            "run the check step again",
        )),
        Err(e) => Err(fail(e.to_string(), "install OpenSSH's client")),
    }
}

/// How long the sweep there may take in all, and one start of it: its batch found on that
/// machine's own memory, not borrowed from this one's.
pub const SWEEP_SECONDS: u64 = 900;
pub const POINT_SECONDS: u64 = TRAINING_SECONDS;
/// Seconds the doctor there may give the project's Python (and its libtorch) before the
/// training step goes on without its report.
pub const DOCTOR_SECONDS: u64 = 60;

pub(super) fn training_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let ledger = match crate::jobs::open_ledger() {
        Ok(l) => l,
        Err(e) => return fail(e.to_string(), "check that Headroom's folder is writable"),
    };
    let device =
        remote_platform(p, ctx.timeout).map_or("cpu", |(os, arch, _)| remote_device(&os, &arch));
    doctor_there(ctx, &ledger);
    // A command that takes the batch is swept there (batch=auto); one that does not runs once.
    if ctx.project.has("batch") {
        return sweep_there(ctx, &ledger, device);
    }
    // Its command sets its own batch (the observer reads it from the DataLoader).
    let argv = remote_argv(ctx.project, None, device);
    (ctx.on)(&format!(
        "running the project there on {device}, at the batch its command sets (at most {TRAINING_SECONDS} s)"
    ));
    let out: crate::jobs::watch::WatchOutcome = match headroom_run_there(
        ctx,
        &format!("--max-seconds {TRAINING_SECONDS}"),
        &argv,
        Duration::from_secs(TRAINING_SECONDS + 120),
        "`headroom run` of the project",
    ) {
        Ok(o) => o,
        Err(failed) => return failed,
    };
    let command = argv.join(" ");
    let observed_device = out
        .observed
        .as_ref()
        .and_then(|o| o.device.clone())
        .unwrap_or_else(|| device.to_owned());
    let status = if out.interrupted {
        crate::ledger::RunStatus::Interrupted
    } else if out.exit_code == Some(0) || (out.stopped_at_limit && out.steps > 0) {
        crate::ledger::RunStatus::Complete
    } else {
        crate::ledger::RunStatus::Failed
    };
    let id = ledger
        .begin_run(&crate::ledger::NewRun {
            kind: crate::ledger::RunKind::Run,
            host: p.name.clone(),
            device: observed_device.clone(),
            device_name: command.chars().take(120).collect(),
            workload: command.chars().take(200).collect(),
            dtype: None,
            mode: None,
            libtorch: out.torch_version.clone().unwrap_or_else(|| "unknown".into()),
            git_commit: None,
            git_dirty: None,
            budget_bytes: None,
            fallback: None,
            request_json: serde_json::json!({
                "command": command,
                "batch": out.batch,
                "tag": { "project": ctx.project.name, "migrated_to": p.name, "remote_run": out.run_id },
            })
            .to_string(),
            owner_pid: Some(std::process::id()),
        })
        .and_then(|id| {
            for e in &out.epochs {
                ledger.add_sample(id, 100_000 + e.epoch, "epoch", e)?;
            }
            ledger.finish_watch(
                id,
                status,
                &out,
                out.batch,
                out.peak_tree_bytes,
                out.fallback,
                &format!("run {} on {}: {}", out.run_id, p.name, out.verdict.reason),
            )?;
            Ok(id)
        });
    let id = match id {
        Ok(id) => id,
        Err(e) => {
            return fail(
                format!(
                    "the run on {} finished but could not be recorded here: {e}",
                    p.name
                ),
                "check that Headroom's folder is writable",
            )
        }
    };
    let figures = format!(
        "{} steps, {} samples/s, its processes peaking at {}",
        out.steps,
        out.samples_per_s
            .map_or_else(|| "?".into(), |v| format!("{v:.1}")),
        crate::budget::format_bytes(out.peak_tree_bytes)
    );
    if status == crate::ledger::RunStatus::Complete {
        pass(format!(
            "ran `{command}` in {} on {} ({observed_device}): {figures}; recorded here as run {id} under host {} (run {} there)",
            ctx.remote_dir, p.name, p.name, out.run_id
        ))
    } else {
        fail(
            format!(
                "`{command}` on {} ended {} ({figures}); recorded here as run {id}: {}",
                p.name,
                status.as_str(),
                out.verdict.reason
            ),
            format!("run it there by hand to see its output: `ssh {} 'cd {} && .venv/bin/python …'`, fix the project or its requirements, then this step again", p.name, ctx.remote_dir),
        )
    }
}

/// `headroom run --json ARGS -- ARGV` in the project's folder there, over ssh: its own lines
/// (the command's, `headroom run`'s notes) streamed as "there: …" while it runs, its JSON result
/// read; `what` names it in the failure.
pub(super) fn headroom_run_there<T: serde::de::DeserializeOwned>(
    ctx: &mut Context<'_>,
    args: &str,
    argv: &[String],
    limit: Duration,
    what: &str,
) -> Result<T, Outcome> {
    let p = ctx.profile;
    let script = format!(
        "cd {} && {} run --json {args} -- {}",
        sh_quote(ctx.remote_dir),
        sh_quote(&check::remote_headroom(p)),
        argv.iter()
            .map(|a| sh_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let on = &mut *ctx.on;
    let f = check::ssh_command(p, ctx.timeout)
        .and_then(|mut c| {
            c.arg(&p.name).arg(&script);
            crate::child::run_streamed(&mut c, limit, crate::child::Pipe::Stderr, &mut |l| {
                on(&format!("there: {l}"));
            })
            .map_err(|e| spawn_err("ssh", &e))
        })
        .map_err(|e| fail(e.to_string(), "install OpenSSH's client"))?;
    serde_json::from_str(&f.stdout).map_err(|_| {
        fail(
            format!("{what} on {} gave no result: {}", p.name, last_line(&f.stderr)),
            "run the headroom and project steps again (Headroom and the environment must be there), then this one",
        )
    })
}

/// Headroom's doctor there, on the project's environment (`.venv/bin/python`), recorded here as
/// a doctor run under the host's name: the machine, the Python, the torch build and its MPS
/// flags that the runs there are then compared by. A doctor that gives no report is said and
/// passed over: the training step does not hang on it.
pub(super) fn doctor_there(ctx: &mut Context<'_>, ledger: &crate::ledger::Ledger) -> Option<i64> {
    let p = ctx.profile;
    (ctx.on)(&format!(
        "asking Headroom's doctor on {} about the project's environment",
        p.name
    ));
    let script = format!(
        "cd {} && {} doctor --json --only-named --python .venv/bin/python --timeout {}",
        sh_quote(ctx.remote_dir),
        sh_quote(&check::remote_headroom(p)),
        DOCTOR_SECONDS
    );
    let said = remote(
        p,
        &script,
        None,
        Duration::from_secs(2 * DOCTOR_SECONDS + 30),
        ctx.timeout,
    )
    .map_err(|e| e.to_string())
    .and_then(|f| {
        serde_json::from_str::<crate::readiness::Report>(&f.stdout)
            .map_err(|_| format!("no report: {}", last_line(&f.stderr)))
    })
    .and_then(|report| {
        crate::jobs::doctor::record_for(ledger, &p.name, &report, r#"{"from":"migrate"}"#)
            .map(|id| (id, report))
            .map_err(|e| e.to_string())
    });
    match said {
        Ok((id, report)) => {
            let lights: Vec<String> = report
                .lights
                .iter()
                .map(|l| format!("{}: {}", l.backend, l.state.as_str()))
                .collect();
            (ctx.on)(&format!(
                "doctor there: {}; recorded here as run {id}",
                lights.join(", ")
            ));
            Some(id)
        }
        Err(why) => {
            (ctx.on)(&format!(
                "doctor there gave no report ({why}); its facts stay unknown in the comparison"
            ));
            None
        }
    }
}

/// The search the project's sweep here ran (its first and largest batch, and the batch it
/// chose), so the sweep there searches the same range; `run`'s defaults when there was none.
pub(super) fn search_here(
    ledger: &crate::ledger::Ledger,
    project: &str,
) -> (u32, u32, Option<(u32, i64)>) {
    let (mut start, mut max) = (16, 65536);
    let chosen = crate::evidence::project_batch(ledger, project)
        .ok()
        .flatten();
    if let Some((_, id)) = chosen {
        let req = request_of(ledger, id);
        let field = |k: &str| {
            req.as_ref()
                .and_then(|r| r.get(k))
                .and_then(serde_json::Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .filter(|v| *v > 0)
        };
        start = field("start").unwrap_or(start);
        max = field("max").unwrap_or(max);
    }
    (start, max, chosen)
}

/// The project's batch=auto sweep on the remote (`headroom run --sweep batch=auto` there, its
/// lines streamed), recorded here as a sweep under the host's name with every point.
pub(super) fn sweep_there(
    ctx: &mut Context<'_>,
    ledger: &crate::ledger::Ledger,
    device: &str,
) -> Outcome {
    let p = ctx.profile;
    let (start, max, here) = search_here(ledger, &ctx.project.name);
    let argv = remote_argv(ctx.project, None, device);
    let command = argv.join(" ");
    (ctx.on)(&format!(
        "sweeping the project there on {device}: batch=auto from {start} up to {max}, each start at most {POINT_SECONDS} s{}",
        here.map_or_else(String::new, |(b, run)| format!(" (here sweep {run} chose batch {b})"))
    ));
    let out: crate::jobs::usersweep::ScriptSweepOutcome = match headroom_run_there(
        ctx,
        &format!(
            "--sweep batch=auto --start-batch {start} --max-batch {max} --point-seconds {POINT_SECONDS}"
        ),
        &argv,
        Duration::from_secs(SWEEP_SECONDS + 60),
        "the sweep of the project",
    ) {
        Ok(o) => o,
        Err(failed) => return failed,
    };
    let id = match record_sweep(ledger, &p.name, &ctx.project.name, &out, (start, max)) {
        Ok(id) => id,
        Err(e) => {
            return fail(
                format!(
                    "the sweep on {} finished but could not be recorded here: {e}",
                    p.name
                ),
                "check that Headroom's folder is writable",
            )
        }
    };
    let s = &out.sweep;
    let there_device = out.device.clone().unwrap_or_else(|| device.to_owned());
    let best = s
        .summary
        .as_ref()
        .and_then(|sum| sum.recommended_batch)
        .and_then(|b| {
            s.points
                .iter()
                .find(|pt| pt.batch == b && pt.samples_per_s.is_some())
        });
    let measured = s
        .points
        .iter()
        .filter(|pt| pt.samples_per_s.is_some())
        .count();
    let remote_run = format!(
        "{}{}",
        s.run_id
            .map_or_else(String::new, |r| format!(" (run {r} there)")),
        there_cautions(&p.name, s)
    );
    match best {
        Some(pt) => Outcome {
            runs: vec![id],
            ..pass(format!(
                "swept `{command}` in {} on {} ({there_device}): batch {} recommended there, {} samples/s, peaking at {}{}; {measured} of {} batches measured; recorded here as sweep {id} under host {}{remote_run}",
                ctx.remote_dir,
                p.name,
                pt.batch,
                pt.samples_per_s.map_or_else(|| "?".into(), |v| format!("{v:.1}")),
                pt.peak_bytes.map_or_else(|| "?".into(), crate::budget::format_bytes),
                here.map_or_else(String::new, |(b, _)| if b == pt.batch {
                    " (the same batch as here)".to_owned()
                } else {
                    format!(" (here: batch {b})")
                }),
                s.points.len(),
                p.name
            ))
        },
        None => fail(
            format!(
                "the sweep of `{command}` on {} measured no batch ({}); recorded here as sweep {id}",
                p.name,
                s.error.as_ref().map_or_else(
                    || s.points.first().and_then(|pt| pt.message.clone()).unwrap_or_else(|| "no point ran".into()),
                    |e| e.message.clone()
                )
            ),
            format!("run it there by hand to see its output: `ssh {} 'cd {} && {}'`, fix the project or its requirements, then this step again", p.name, ctx.remote_dir, argv.iter().map(|a| if a == "{batch}" { "16" } else { a.as_str() }).collect::<Vec<_>>().join(" ")),
        ),
    }
}

/// A remote sweep's doubt, said as that machine's: its cautions (other work, memory pressure,
/// noise) were read there, so "timed while zoom.us used 1.4 cores" names a process on `host`.
/// Empty when its answer is not in doubt.
pub(super) fn there_cautions(host: &str, s: &crate::jobs::sweep::SweepOutcome) -> String {
    let Some(u) = s.summary.as_ref().and_then(|sum| sum.uncertain.as_ref()) else {
        return String::new();
    };
    let first = s
        .points
        .iter()
        .flat_map(crate::protocol::Point::cautions)
        .next();
    format!(
        ". On {host}, {u}{}",
        first.map_or_else(String::new, |c| format!(" (there, {c})"))
    )
}

/// Records a sweep the remote ran (its every point and its answer) in this ledger, under the
/// host's name, tagged with the project and the run there.
pub(super) fn record_sweep(
    ledger: &crate::ledger::Ledger,
    host: &str,
    project: &str,
    out: &crate::jobs::usersweep::ScriptSweepOutcome,
    (start, max): (u32, u32),
) -> Result<i64, CoreError> {
    use crate::ledger::{NewRun, RunKind, RunStatus};
    let s = &out.sweep;
    let id = ledger.begin_run(&NewRun {
        kind: RunKind::Sweep,
        host: host.to_owned(),
        device: out.device.clone().unwrap_or_else(|| "script".into()),
        device_name: out.command.chars().take(120).collect(),
        workload: out.command.chars().take(200).collect(),
        dtype: None,
        mode: None,
        libtorch: s
            .hello
            .as_ref()
            .map_or_else(|| "unknown".into(), |h| h.libtorch.clone()),
        git_commit: None,
        git_dirty: None,
        budget_bytes: s.hello.as_ref().map(|h| h.budget_bytes),
        fallback: None,
        request_json: serde_json::json!({
            "script": true,
            "command": out.command,
            "start": start,
            "max": max,
            "tag": { "project": project, "migrated_to": host, "remote_run": s.run_id },
        })
        .to_string(),
        owner_pid: Some(std::process::id()),
    })?;
    for (seq, pt) in s.points.iter().enumerate() {
        ledger.add_point(id, u32::try_from(seq).unwrap_or(u32::MAX), pt)?;
    }
    let status = match s.status {
        crate::jobs::JobStatus::Complete => RunStatus::Complete,
        crate::jobs::JobStatus::Interrupted => RunStatus::Interrupted,
        _ => RunStatus::Failed,
    };
    let note = format!(
        "sweep {} on {host}{}",
        s.run_id.map_or_else(|| "?".into(), |r| r.to_string()),
        s.error
            .as_ref()
            .map_or_else(String::new, |e| format!(": {}", e.message))
    );
    ledger.finish_run(id, status, s.summary.as_ref(), Some(&note))?;
    Ok(id)
}
