//! Step 7, here and there side by side: the runs compared and judged by the decision table.

use super::*;

/// The project a run measured, from its request's tag.
pub(super) fn project_of(ledger: &crate::ledger::Ledger, id: i64) -> Option<String> {
    let req = request_of(ledger, id)?;
    req.get("project")
        .or_else(|| req.get("tag").and_then(|t| t.get("project")))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

/// Whether a sweep is a device comparison's baseline (its request names the sweep it serves).
pub(super) fn is_baseline(ledger: &crate::ledger::Ledger, id: i64) -> bool {
    request_of(ledger, id).is_some_and(|req| req.get("baseline_of").is_some_and(|b| !b.is_null()))
}

/// A run's request, as recorded with it.
pub(super) fn request_of(ledger: &crate::ledger::Ledger, id: i64) -> Option<serde_json::Value> {
    serde_json::from_str(&ledger.request_json(id).ok()??).ok()
}

/// One figure of a run's report (a wrapped run's outcome).
pub(super) fn figure(r: &crate::ledger::RunRecord, key: &str) -> Option<f64> {
    r.report.as_ref()?.get(key)?.as_f64()
}

pub(super) fn compare_step(ctx: &mut Context<'_>) -> Outcome {
    use crate::ledger::{RunKind, RunStatus};
    let p = ctx.profile;
    let ledger = match crate::jobs::open_ledger() {
        Ok(l) => l,
        Err(e) => return fail(e.to_string(), "check that Headroom's folder is writable"),
    };
    let runs = match ledger.list_runs(500) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string(), "check the ledger: `headroom ledger list`"),
    };
    // A run stopped before its end counts when it measured steps: Watch my training ends
    // that way when the user stops it.
    let ours = |r: &&crate::ledger::RunRecord| {
        r.kind == RunKind::Run
            && (r.status == RunStatus::Complete
                || (r.status == RunStatus::Interrupted
                    && figure(r, "samples_per_s").is_some_and(|v| v > 0.0)))
            && project_of(&ledger, r.id).as_deref() == Some(ctx.project.name.as_str())
    };
    // The project's sweeps: the one there (the training step) against the one here, each at
    // the batch it chose on its own machine.
    // (A device comparison's baseline, one point at the other device's batch, is not a sweep.)
    let swept = |r: &&crate::ledger::RunRecord| {
        r.kind == RunKind::Sweep
            && r.status == RunStatus::Complete
            && r.chosen_batch.is_some()
            && project_of(&ledger, r.id).as_deref() == Some(ctx.project.name.as_str())
            && !is_baseline(&ledger, r.id)
    };
    if let Some(there) = runs.iter().filter(swept).find(|r| r.host == p.name) {
        let Some(here) = runs.iter().filter(swept).find(|r| r.host != p.name) else {
            return fail(
                format!("{} was swept on {} (sweep {}), but never here, so there is nothing to compare it with", ctx.project.name, p.name, there.id),
                format!("sweep it here once: `headroom run --project {} --sweep batch=auto` (or Sweep my training in the app), then this step again", ctx.project.name),
            );
        };
        let at_chosen = |r: &crate::ledger::RunRecord| {
            let (_, points) = ledger.get_run(r.id).ok()?;
            points
                .into_iter()
                .find(|pt| Some(pt.batch) == r.chosen_batch && pt.samples_per_s.is_some())
        };
        let (Some(a), Some(b)) = (at_chosen(here), at_chosen(there)) else {
            return fail(
                format!(
                    "sweeps {} and {} name a batch they did not measure",
                    here.id, there.id
                ),
                "sweep the project again here and run the training step again",
            );
        };
        let side = |r: &crate::ledger::RunRecord, pt: &crate::protocol::Point| {
            format!(
                "batch {}, {} samples/s, step {} ms, peak {} (sweep {}, {} on {})",
                pt.batch,
                pt.samples_per_s
                    .map_or_else(|| "?".into(), |v| format!("{v:.1}")),
                pt.step_ms_p50
                    .map_or_else(|| "?".into(), |v| format!("{v:.1}")),
                pt.peak_bytes
                    .map_or_else(|| "?".into(), crate::budget::format_bytes),
                r.id,
                r.device,
                r.host
            )
        };
        let ratio = speed_ratio(&p.name, a.samples_per_s, b.samples_per_s);
        let tail = compare_tail(ctx, &ledger, here.id, there.id);
        return Outcome {
            runs: vec![here.id, there.id],
            ..pass(format!(
                "here: {}; there: {}; {ratio} at its own batch{tail}",
                side(here, &a),
                side(there, &b)
            ))
        };
    }
    let Some(there) = runs.iter().filter(ours).find(|r| r.host == p.name) else {
        return fail(
            format!(
                "no finished run of {} from {} in this ledger",
                ctx.project.name, p.name
            ),
            "run the training step first",
        );
    };
    let Some(here) = runs.iter().filter(ours).find(|r| r.host != p.name) else {
        return fail(
            format!("{} ran on {} (run {}), but never here, so there is nothing to compare it with", ctx.project.name, p.name, there.id),
            format!("run it here once: `headroom run --project {} --batch N` (or Watch my training in the app), then this step again", ctx.project.name),
        );
    };
    let side = |r: &crate::ledger::RunRecord| {
        format!(
            "{} samples/s, step {} ms, peak {} (run {}, {} on {})",
            figure(r, "samples_per_s").map_or_else(|| "?".into(), |v| format!("{v:.1}")),
            figure(r, "step_ms_p50").map_or_else(|| "?".into(), |v| format!("{v:.1}")),
            r.peak_bytes
                .map_or_else(|| "?".into(), crate::budget::format_bytes),
            r.id,
            r.device,
            r.host
        )
    };
    let ratio = speed_ratio(
        &p.name,
        figure(here, "samples_per_s"),
        figure(there, "samples_per_s"),
    );
    let tail = compare_tail(ctx, &ledger, here.id, there.id);
    Outcome {
        runs: vec![here.id, there.id],
        ..pass(format!(
            "here: {}; there: {}; {ratio}{tail}",
            side(here),
            side(there),
        ))
    }
}

/// "box is 72 % faster" (or slower) from the throughputs here and there.
pub(super) fn speed_ratio(host: &str, here: Option<f64>, there: Option<f64>) -> String {
    match (here, there) {
        (Some(a), Some(b)) if a > 0.0 => {
            let c = b / a - 1.0;
            if c >= 0.0 {
                format!("{host} is {:.0} % faster", c * 100.0)
            } else {
                format!("{host} is {:.0} % slower", -c * 100.0)
            }
        }
        _ => "their throughputs cannot be compared (one run measured no steps)".into(),
    }
}

/// What the two runs differ in (the ledger's comparison) and the decision table's headline now.
pub(super) fn compare_tail(
    ctx: &Context<'_>,
    ledger: &crate::ledger::Ledger,
    here: i64,
    there: i64,
) -> String {
    let differ: Vec<String> = crate::report::compare(ledger, here, there)
        .unwrap_or_default()
        .into_iter()
        .skip_while(|l| !l.starts_with("facts that differ"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_owned())
        // The host, the device and the command are said above already; "x vs unknown" (what
        // one side did not record) explains nothing.
        .filter(|l| {
            l.split_once(": ").is_none_or(|(k, v)| {
                !["host", "device", "workload"].contains(&k)
                    && v.split_once(" vs ")
                        .is_none_or(|(x, y)| !x.starts_with("unknown") && !y.starts_with("unknown"))
            })
        })
        .collect();
    let mut sampler = crate::contention::Sampler::new();
    let (now, _) = crate::jobs::decide_now::now(&mut sampler, Some(&ctx.project.name));
    format!(
        "{}; the decision table now: {}",
        if differ.is_empty() {
            String::new()
        } else {
            format!(" (they differ in {})", differ.join("; "))
        },
        now.decision.headline
    )
}
