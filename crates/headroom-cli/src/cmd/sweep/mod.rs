//! `headroom sweep`: checks the arguments, starts the worker, records every point in the ledger
//! as it arrives, shows progress, and prints the table and recommendation (or one JSON document).

use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Result;
use headroom_core::jobs::{
    self,
    sweep::{CancelToken, Launcher, Update},
};
use headroom_model::budget::format_bytes;
use headroom_model::protocol::{progress_line, BatchPlan, Point, SweepRequest};
use headroom_model::requests::SweepInput;
use headroom_store::ledger::RunStatus;
use indicatif::{ProgressBar, ProgressStyle};

pub(crate) mod output;

/// Arguments of `headroom sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    what: super::WorkloadArgs,
    /// Exactly these batches, e.g. 1,2,4,8 (the sweep stops at the first that fails).
    #[arg(long, conflicts_with_all = ["max_batch", "start_batch"])]
    batches: Option<String>,
    /// Largest batch the search visits [default: 512 on the CPU, 16384 on a GPU].
    #[arg(long)]
    max_batch: Option<u32>,
    /// First batch of the search.
    #[arg(long, default_value_t = 1)]
    start_batch: u32,
    /// Memory budget: a size (12GiB) or a share of the device (80%) [default: 90% of what is available].
    #[arg(long, default_value = "default")]
    budget: String,
    /// train (forward, loss, backward, optimizer) or infer (forward only).
    #[arg(long, default_value = "train")]
    mode: String,
    /// Timed steps per batch [default: as many as fit in about 0.25 s, at least 1; settled
    /// warm-up steps count].
    #[arg(long)]
    steps: Option<u32>,
    /// Intra-op CPU threads [default: libtorch's].
    #[arg(long)]
    threads: Option<u32>,
    /// Run points even when their predicted peak is above the budget, and find the largest batch
    /// by doubling and bisection alone (no jump to the predicted limit).
    #[arg(long)]
    no_predict: bool,
    /// Make inputs on the host and copy them to the device every step, as a data loader without
    /// pinned memory would [default: inputs made once on the device].
    #[arg(long)]
    host_inputs: bool,
    /// Then measure the recommended batch on another stack too: `cpu` (the speed-up baseline
    /// `headroom decide` needs) or `mlx` (the same mlp or matmul workload through a Python's MLX).
    #[arg(long, value_name = "cpu|mlx")]
    compare: Option<String>,
    /// The Python whose MLX `--compare mlx` runs [default: the first one doctor finds with mlx].
    #[arg(long, value_name = "PATH")]
    mlx_python: Option<std::path::PathBuf>,
    #[command(flatten)]
    record: super::record::RecordArgs,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    json: bool,
}

/// The arguments as the core's sweep input (the app's Sweep form fills the same one).
pub fn input(a: &SweepArgs) -> SweepInput {
    SweepInput {
        what: a.what.input(),
        budget: a.budget.clone(),
        mode: a.mode.clone(),
        batches: a.batches.clone(),
        max_batch: a.max_batch,
        start_batch: a.start_batch,
        steps: a.steps,
        threads: a.threads,
        predict: !a.no_predict,
        host_inputs: a.host_inputs,
        compare: a.compare.clone(),
    }
}

/// Checks the arguments and turns them into the worker's request.
pub fn request(a: &SweepArgs) -> Result<SweepRequest> {
    Ok(input(a).request()?)
}

/// Cancelled by Ctrl-C or SIGTERM. The terminal's Ctrl-C reaches the worker too (same process
/// group); a signal sent to this pid alone (`kill -INT`, a job runner's SIGTERM) does not, so the
/// handler kills the worker itself ([`CancelToken::cancel`] is signal-safe). The run is closed as
/// interrupted by the user, its points kept.
static CTRL_C: OnceLock<CancelToken> = OnceLock::new();

extern "C" fn on_sigint(_: libc::c_int) {
    if let Some(t) = CTRL_C.get() {
        t.cancel();
    }
}

/// A handler, unlike SIG_IGN, is not inherited by the worker across exec.
fn catch_interrupt() -> CancelToken {
    let token = CTRL_C
        .get_or_init(|| CancelToken::new("interrupted (Ctrl-C)"))
        .clone();
    // SAFETY: the handler only does atomic loads and stores and kill(2), which are
    // async-signal-safe.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            libc::signal(sig, on_sigint as *const () as libc::sighandler_t);
        }
    }
    token
}

/// What people see while it runs: the spinner's message, and lines above it.
struct Progress {
    bar: ProgressBar,
    quiet: bool,
    points: Vec<Point>,
}

impl Progress {
    /// A line for people: above the spinner on a terminal, plain on stderr otherwise (where the
    /// spinner is hidden and would swallow it), nothing with `--json` (it is all in the document).
    fn say(&self, line: String) {
        if self.quiet {
            return;
        }
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    fn on(&mut self, u: &Update, req: &SweepRequest) {
        match u {
            Update::WorkerStarted { pid } => self.bar.set_message(format!(
                "starting worker (pid {pid}) for {} on {}",
                req.workload, req.device
            )),
            Update::Started { run_id, hello: h } => {
                #[allow(clippy::cast_precision_loss)]
                let millions = h.parameters as f64 / 1e6;
                self.say(format!(
                    "run {run_id}: {} on {} ({}), budget {}, {} threads, {millions:.2} M parameters",
                    h.workload,
                    h.device,
                    h.device_name,
                    format_bytes(h.budget_bytes),
                    h.threads,
                ));
            }
            Update::Progress {
                batch,
                phase,
                step,
                of,
            } => {
                self.bar.set_message(format!(
                    "{}{}",
                    progress_line(*batch, *phase, *step, *of),
                    best_so_far(&self.points)
                ));
            }
            Update::Point { point } => {
                self.say(output::point_line(point));
                headroom_model::protocol::upsert_point(&mut self.points, point.clone());
            }
            // A point's cautions are said with the table, together.
            Update::Warning { message } if output::is_point_caution(&self.points, message) => {}
            Update::Warning { message } => self.say(format!("warning: {message}")),
        }
    }
}

pub fn run(args: &SweepArgs) -> Result<ExitCode> {
    run_on(args, None)
}

/// The sweep with its workers on `remote` (over ssh) instead of this machine.
pub fn run_on(args: &SweepArgs, remote: Option<Launcher>) -> Result<ExitCode> {
    let req = request(args)?;
    let ledger = super::open_ledger_keeping()?;
    args.record.attach(
        &ledger,
        remote.as_ref().and_then(Launcher::profile),
        args.json,
    )?;
    let exe = match remote {
        Some(l) => l,
        None => Launcher::Local(jobs::worker_binary()?),
    };
    let cancel = catch_interrupt();
    let mut progress = Progress {
        bar: progress_bar(args.json),
        quiet: args.json,
        points: Vec::new(),
    };
    let report = jobs::sweep::run_sweep_on(&exe, &req, &ledger, &cancel, &mut |u| {
        progress.on(u, &req);
    })?;
    progress.bar.finish_and_clear();
    if !args.json {
        output::print_human(&report);
    }
    let complete = report.run_status() == Some(RunStatus::Complete);
    let comparison = match args.compare.as_deref() {
        Some("cpu") if complete => baseline(&req, &report, &exe, &ledger, &cancel, &mut progress)?,
        _ => None,
    };
    let mlx = match args.compare.as_deref() {
        Some("mlx") if complete => mlx_side(
            &req,
            &report,
            &ledger,
            args.mlx_python.clone(),
            &mut progress,
        )?,
        _ => None,
    };
    if args.json {
        let mut doc = serde_json::to_value(&report)?;
        if let (Some(c), Some(map)) = (&comparison, doc.as_object_mut()) {
            map.insert("compare".into(), serde_json::to_value(c)?);
        }
        if let (Some(c), Some(map)) = (&mlx, doc.as_object_mut()) {
            map.insert("compare_mlx".into(), serde_json::to_value(c)?);
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if let Some(c) = &comparison {
        println!("\nspeed-up: {}", c.sentence());
    }
    if let (Some(c), false) = (&mlx, args.json) {
        println!("\n{}", c.line());
    }
    if !args.json {
        output::print_answer(&report);
    }
    super::settle_ledger(&ledger)?;
    Ok(match (report.run_id, report.run_status()) {
        (Some(_), Some(RunStatus::Complete)) => ExitCode::SUCCESS,
        (None, _) => {
            let msg = report.error.as_ref().map_or_else(
                || {
                    format!(
                        "the worker {} before it started measuring",
                        report.worker_exit.as_deref().unwrap_or("ended")
                    )
                },
                |e| e.message.clone(),
            );
            eprintln!("headroom: error: {msg}");
            if report.error.is_none() {
                for l in &report.stderr_tail {
                    eprintln!("  worker: {l}");
                }
            }
            ExitCode::from(2)
        }
        _ => ExitCode::from(3),
    })
}

/// `--compare mlx`: the recommended batch through a Python's MLX, next to the sweep's own point
/// at that batch; recorded as an `mlx-compare` run.
fn mlx_side(
    req: &SweepRequest,
    report: &jobs::sweep::SweepOutcome,
    ledger: &headroom_store::ledger::Ledger,
    python: Option<std::path::PathBuf>,
    progress: &mut Progress,
) -> Result<Option<headroom_core::mlx::MlxComparison>> {
    let Some(batch) = report.summary.as_ref().and_then(|s| s.recommended_batch) else {
        progress
            .say("--compare mlx: no batch was recommended, so there is nothing to compare".into());
        return Ok(None);
    };
    let Some(point) = report.points.iter().find(|p| p.batch == batch) else {
        return Ok(None);
    };
    let python = match python {
        Some(p) => p,
        None => headroom_core::mlx::find_python(None)?,
    };
    progress.say(format!(
        "MLX: {} at batch {batch} in {}",
        req.workload,
        python.display()
    ));
    let steps = point.timed_steps.clamp(5, 50);
    let r = headroom_core::mlx::run(
        &python,
        &req.workload,
        batch,
        3,
        steps,
        std::time::Duration::from_secs(600),
    )?;
    let device = report.hello.as_ref().map_or("?", |h| h.device.as_str());
    let Some(c) = headroom_core::mlx::MlxComparison::new(device, report.run_id, point, &r, &python)
    else {
        progress.say("--compare mlx: one side gave no throughput".into());
        return Ok(None);
    };
    headroom_core::mlx::record(ledger, &c)?;
    Ok(Some(c))
}

/// The CPU run of `--compare cpu`: the recommended batch alone, recorded as its own run.
fn baseline(
    req: &SweepRequest,
    report: &jobs::sweep::SweepOutcome,
    exe: &Launcher,
    ledger: &headroom_store::ledger::Ledger,
    cancel: &CancelToken,
    progress: &mut Progress,
) -> Result<Option<headroom_model::summary::Comparison>> {
    let device = report.hello.as_ref().map_or("?", |h| h.device.as_str());
    let Some(batch) = report.summary.as_ref().and_then(|s| s.recommended_batch) else {
        progress
            .say("--compare cpu: no batch was recommended, so there is nothing to compare".into());
        return Ok(None);
    };
    if device == "cpu" {
        progress.say("--compare cpu: the sweep itself ran on the CPU; nothing to compare".into());
        return Ok(None);
    }
    progress.say(format!("baseline: batch {batch} on the CPU"));
    let cpu_req = SweepRequest {
        device: "cpu".into(),
        plan: BatchPlan::Explicit {
            batches: vec![batch],
        },
        prior: Vec::new(),
        ..req.clone()
    };
    progress.points.clear();
    progress.bar = progress_bar(progress.quiet);
    let cpu = jobs::sweep::run_sweep_on(exe, &cpu_req, ledger, cancel, &mut |u| {
        progress.on(u, &cpu_req);
    })?;
    progress.bar.finish_and_clear();
    let found = headroom_model::summary::compare(device, &report.points, &cpu.points, batch);
    if found.is_none() {
        let why = cpu
            .error
            .as_ref()
            .map_or("it was not measured", |e| e.message.as_str());
        progress.say(format!(
            "--compare cpu: batch {batch} on the CPU gave no step time: {why}"
        ));
    }
    Ok(found.map(|c| headroom_model::summary::Comparison {
        cpu_run_id: cpu.run_id,
        ..c
    }))
}

fn progress_bar(hidden: bool) -> ProgressBar {
    if hidden {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

fn best_so_far(points: &[Point]) -> String {
    points
        .iter()
        .filter_map(|p| p.samples_per_s.map(|s| (p.batch, s)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(b, s)| {
            format!(
                " · best so far {} samples/s at batch {b}",
                headroom_model::stats::sig3(s)
            )
        })
        .unwrap_or_default()
}
