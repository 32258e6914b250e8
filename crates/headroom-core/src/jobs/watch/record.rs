//! The ledger's side: the run begun with its context, and finished with what was measured — its
//! step figures, its epochs and their verdict, how it ended.

use super::*;

pub(super) fn begin(
    ledger: &Ledger,
    what: RunKind,
    command: &str,
    opts: &WatchOptions,
) -> Result<i64, CoreError> {
    let git = git_state(&run_dir(opts));
    ledger
        .begin_run(&NewRun {
            kind: what,
            host: super::super::hostname(),
            // Learnt from inside when the observer sees the tensors' device.
            device: "unknown".into(),
            device_name: command.chars().take(120).collect(),
            workload: command.chars().take(200).collect(),
            dtype: None,
            mode: None,
            libtorch: opts
                .torch_version
                .clone()
                .unwrap_or_else(|| "unknown".into()),
            git_commit: git.commit,
            git_dirty: git.dirty,
            budget_bytes: None,
            fallback: None,
            request_json: serde_json::to_string(
                &serde_json::json!({ "command": command, "batch": opts.batch, "tag": opts.tag }),
            )?,
            owner_pid: Some(std::process::id()),
        })
        .and_then(|id| {
            ledger.add_sample(
                id,
                crate::ledger::THRESHOLDS_SEQ,
                "thresholds",
                &opts.thresholds,
            )?;
            Ok(id)
        })
}

/// The folder a command runs in.
pub(super) fn run_dir(opts: &WatchOptions) -> std::path::PathBuf {
    opts.dir
        .clone()
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default())
}

/// How the watched command ended.
pub(super) struct Ending {
    pub(super) command: String,
    pub(super) exit_code: Option<i32>,
    pub(super) signal: Option<i32>,
    pub(super) success: bool,
    /// Seconds it waited at its gate before it was watched (see [`Launched`]).
    pub(super) waited_s: Option<f64>,
}

/// Step figures: from the observer's steps where it saw any, else from `headroom-step` lines.
pub(super) struct StepFigures {
    pub(super) steps: usize,
    pub(super) step_ms: Vec<f64>,
    pub(super) samples_per_s: Option<f64>,
    pub(super) data_ms: Vec<f64>,
    pub(super) compute_ms: Vec<f64>,
    pub(super) data_share: Option<f64>,
}

/// [`StepFigures`] of a run. `forced`: the batch the user or Headroom's sweep put into the
/// command, which then is every iteration's; `batch`: that, or the one most iterations had
/// (all a marker line can give).
#[allow(clippy::cast_precision_loss)]
pub(super) fn step_figures(t: &Tally, forced: Option<u32>, batch: Option<u32>) -> StepFigures {
    // The observer's steps, unless the script marks its own data stage (the markers then say
    // what the user means by it, and a loop without a DataLoader has no waits to observe).
    if t.observer_steps() {
        let step_ms = t.obs.step_ms();
        let (data_ms, data_share) = t.obs.data();
        let compute_ms = t
            .obs
            .steps
            .iter()
            .filter_map(|s| Some((s.ms? - s.data_ms).max(0.0)))
            .collect();
        return StepFigures {
            steps: t.obs.steps.len(),
            step_ms,
            // Each iteration at its own batch unless one was put into the command: a loop
            // whose batches vary (length-bucketed, a token budget) is not its commonest batch.
            samples_per_s: t.obs.samples_per_s(forced.map(u64::from)),
            data_ms,
            compute_ms,
            data_share,
        };
    }
    let step_ms: Vec<f64> = t.step_at.windows(2).map(|w| (w[1] - w[0]) * 1e3).collect();
    let split = split_steps(&t.step_at, &t.data_at);
    let (data_ms, compute_ms): (Vec<f64>, Vec<f64>) = split.iter().copied().unzip();
    let total: f64 = data_ms.iter().sum::<f64>() + compute_ms.iter().sum::<f64>();
    // Steps over the time they took, not the batch over the median step: a script that waits on
    // its data now and then is measured as it runs.
    let span = match (t.step_at.first(), t.step_at.last()) {
        (Some(a), Some(b)) if b > a => Some(b - a),
        _ => None,
    };
    StepFigures {
        steps: t.step_at.len(),
        samples_per_s: match (batch, span) {
            (Some(b), Some(span)) => Some(f64::from(b) * (t.step_at.len() - 1) as f64 / span),
            _ => None,
        },
        step_ms,
        data_share: (total > 0.0).then(|| data_ms.iter().sum::<f64>() / total),
        data_ms,
        compute_ms,
    }
}

pub(super) fn finish(
    ledger: &Ledger,
    mut t: Tally,
    end: Ending,
    started: Instant,
    opts: &WatchOptions,
) -> Result<WatchOutcome, CoreError> {
    let verdict = judge(&t.epochs, &opts.thresholds);
    let first_step_s = t.step_times().first().copied();
    // A settled run is timed over its settled steps only.
    if let Some(from) = t.window {
        if t.observer_steps() {
            t.obs.steps.drain(..from);
            if let Some(first) = t.obs.steps.first_mut() {
                first.ms = None;
            }
        } else {
            t.step_at.drain(..from);
        }
    }
    let gpu_busy = t.busy.as_ref().and_then(crate::gpu_busy::BusySampler::mean);
    let mut op_times: Vec<OpTime> = t
        .ops
        .iter()
        .map(|(name, (ms, calls))| OpTime {
            name: name.clone(),
            gpu_ms: *ms,
            calls: *calls,
        })
        .collect();
    op_times.sort_by(|a, b| b.gpu_ms.total_cmp(&a.gpu_ms).then(a.name.cmp(&b.name)));
    op_times.truncate(20);
    let observed =
        (opts.instrument && t.obs.observed.torch_version.is_some()).then(|| t.obs.observed.clone());
    // The batch: the user's, the command line's, or the one the DataLoader gave.
    let batch = opts.batch.or_else(|| {
        observed
            .as_ref()
            .and_then(|o| o.batch)
            .and_then(|b| u32::try_from(b).ok())
    });
    let f = step_figures(&t, opts.batch, batch);
    let mut fallback_ops = t.fallback_ops.clone();
    for op in observed.iter().flat_map(|o| &o.fallback_ops) {
        if !fallback_ops.contains(op) {
            fallback_ops.push(op.clone());
        }
    }
    let torch_version = opts
        .torch_version
        .clone()
        .or_else(|| observed.as_ref().and_then(|o| o.torch_version.clone()));
    if opts.torch_version.is_none() {
        if let Some(v) = &torch_version {
            ledger.set_libtorch(t.run_id, v)?;
        }
    }
    // The device the command's tensors were on, as seen from inside, instead of "process".
    if let Some(d) = observed.as_ref().and_then(|o| o.device.as_deref()) {
        ledger.set_device(t.run_id, d)?;
    }
    let git = git_state(&run_dir(opts));
    let out = WatchOutcome {
        run_id: t.run_id,
        command: end.command,
        exit_code: end.exit_code,
        seconds: started.elapsed().as_secs_f64(),
        torch_version,
        git_commit: git.commit,
        batch,
        peak_tree_bytes: t.peak,
        fallback: !fallback_ops.is_empty(),
        fallback_ops,
        readings: t.readings,
        epochs: t.epochs,
        verdict,
        gpu_busy,
        op_times,
        oom: t.oom || observed.as_ref().is_some_and(|o| o.oom.is_some()),
        stopped_at_limit: t.stopped_at_limit,
        steps: u32::try_from(f.steps).unwrap_or(u32::MAX),
        step_ms_p50: crate::stats::percentile(&f.step_ms, 50.0),
        step_ms_p95: crate::stats::percentile(&f.step_ms, 95.0),
        step_cv: crate::stats::cv(&f.step_ms),
        samples_per_s: f.samples_per_s,
        data_ms_p50: crate::stats::percentile(&f.data_ms, 50.0),
        compute_ms_p50: crate::stats::percentile(&f.compute_ms, 50.0),
        data_share: f.data_share,
        pipeline: None,
        budget_bytes: opts.budget_bytes,
        over_budget: t.over_budget,
        signal: end.signal,
        interrupted: t.interrupted,
        observed,
        settled: t.window.is_some(),
        first_step_s,
        waited_s: end.waited_s,
        metrics: t.metrics.clone(),
        load: t.load.clone(),
        worker_bytes: t.worker_bytes,
        conditions: t.conditions.clone(),
        epoch_conditions: t.epoch_conditions.clone(),
    };
    let out = WatchOutcome {
        pipeline: out.pipeline_verdict(),
        ..out
    };
    let status = if t.interrupted {
        RunStatus::Interrupted
    } else if end.success {
        RunStatus::Complete
    } else {
        RunStatus::Failed
    };
    let note = match (out.over_budget, end.exit_code, end.signal) {
        (true, _, _) => format!(
            "over budget: stopped at {} of process memory, above the {} budget; {}",
            crate::budget::format_bytes(out.peak_tree_bytes),
            crate::budget::format_bytes(out.budget_bytes.unwrap_or(0)),
            out.verdict.reason
        ),
        (false, _, Some(sig)) if !t.stopped_at_limit => format!(
            "the command was {}; {}",
            describe_signal(sig),
            out.verdict.reason
        ),
        (false, Some(c), _) if c != 0 => {
            format!("the command exited with code {c}; {}", out.verdict.reason)
        }
        _ => out.verdict.reason.clone(),
    };
    ledger.finish_watch(
        t.run_id,
        status,
        &out,
        out.batch,
        out.peak_tree_bytes,
        out.fallback,
        &note,
    )?;
    Ok(out)
}
