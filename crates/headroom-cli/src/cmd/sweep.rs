//! `headroom sweep`: checks the arguments, starts the worker, records every point in the ledger
//! as it arrives, shows progress, and prints the table and recommendation (or one JSON document).

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use headroom_core::budget::{format_bytes, BudgetSpec};
use headroom_core::gitinfo::git_state;
use headroom_core::ledger::{Ledger, NewRun, RunStatus};
use headroom_core::planner::Limit;
use headroom_core::protocol::{
    parse_batches, parse_shape, BatchPlan, Dtype, Event, Hello, Mode, Phase, Point, PointStatus,
    SweepRequest, SweepSummary, PROTOCOL_VERSION,
};
use headroom_core::summary::summarize;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::supervisor::{describe_exit, Output, Worker};

/// Arguments of `headroom sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// auto, cpu, mps, cuda or cuda:N.
    #[arg(long, default_value = "auto")]
    device: String,
    /// mlp, cnn, vit-tiny, gpt-tiny, matmul, or a TorchScript file (model.pt).
    #[arg(long, default_value = "mlp")]
    workload: String,
    /// One sample's shape without the batch, e.g. 3x224x224 (required for a TorchScript file).
    #[arg(long)]
    input_shape: Option<String>,
    /// f32, f16 or bf16.
    #[arg(long, default_value = "f32")]
    dtype: String,
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
    /// Timed steps per batch [default: as many as fit in about 1.5 s, 3 to 200].
    #[arg(long)]
    steps: Option<u32>,
    /// Intra-op CPU threads [default: libtorch's].
    #[arg(long)]
    threads: Option<u32>,
    /// Run points even when their predicted peak is above the budget.
    #[arg(long)]
    no_predict: bool,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    json: bool,
}

/// Checks the arguments and turns them into the worker's request.
pub fn request(a: &SweepArgs) -> Result<SweepRequest> {
    let plan = match (&a.batches, a.max_batch) {
        (Some(list), _) => BatchPlan::Explicit {
            batches: parse_batches(list)?,
        },
        (None, Some(0)) => bail!("--max-batch 0 cannot run anything; give 1 or more"),
        (None, max) => {
            if a.start_batch == 0 {
                bail!("--start-batch 0 cannot run; batches start at 1");
            }
            BatchPlan::Search {
                start: a.start_batch,
                max: max.unwrap_or(0),
            }
        }
    };
    if a.steps == Some(0) {
        bail!("--steps 0 would time nothing; give 1 or more");
    }
    Ok(SweepRequest {
        device: a.device.clone(),
        workload: a.workload.clone(),
        input_shape: a.input_shape.as_deref().map(parse_shape).transpose()?,
        dtype: Dtype::parse(&a.dtype)?,
        mode: Mode::parse(&a.mode)?,
        plan,
        budget: BudgetSpec::parse(&a.budget)?,
        steps: a.steps,
        threads: a.threads,
        predict: !a.no_predict,
    })
}

/// Everything a sweep produced, as printed with `--json`.
#[derive(Debug, Serialize)]
struct Report {
    status: &'static str,
    run_id: Option<i64>,
    ledger: String,
    hello: Option<Hello>,
    points: Vec<Point>,
    summary: Option<SweepSummary>,
    warnings: Vec<String>,
    error: Option<ErrorReport>,
}

#[derive(Debug, Serialize)]
struct ErrorReport {
    code: String,
    message: String,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Ctrl-C reaches the worker (same process group) and ends it; the parent survives to mark the
/// run interrupted. A handler, unlike SIG_IGN, is not inherited by the worker across exec.
fn catch_interrupt() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
}

pub fn run(args: &SweepArgs) -> Result<ExitCode> {
    let req = request(args)?;
    let ledger = Ledger::open_default().context("cannot open the ledger")?;
    catch_interrupt();
    let bar = progress_bar(args.json);
    let mut worker = Worker::start(&req)?;
    bar.set_message(format!(
        "starting worker (pid {}) for {} on {}",
        worker.pid(),
        req.workload,
        req.device
    ));

    let mut report = Report {
        status: "running",
        run_id: None,
        ledger: ledger.path().display().to_string(),
        hello: None,
        points: Vec::new(),
        summary: None,
        warnings: Vec::new(),
        error: None,
    };
    let mut garbage = Vec::new();
    while let Some(out) = worker.next_output() {
        let out = match out {
            Output::Event(e) => Ok(*e),
            Output::Garbage(line) => Err(line),
        };
        match out {
            Err(line) => garbage.push(line),
            Ok(Event::Hello(h)) => {
                if h.protocol != PROTOCOL_VERSION {
                    bail!(
                        "the worker speaks protocol {}, this headroom {}; reinstall headroom",
                        h.protocol,
                        PROTOCOL_VERSION
                    );
                }
                let git = git_state(&std::env::current_dir().unwrap_or_default());
                let id = ledger.begin_run(&NewRun {
                    kind: "sweep".into(),
                    host: super::hostname(),
                    device: h.device.clone(),
                    device_name: h.device_name.clone(),
                    workload: h.workload.clone(),
                    dtype: req.dtype.as_str().into(),
                    mode: req.mode.as_str().into(),
                    libtorch: h.libtorch.clone(),
                    git_commit: git.commit,
                    git_dirty: git.dirty,
                    budget_bytes: Some(h.budget_bytes),
                    // Only MPS can fall back to the CPU; built-in workloads on CPU/CUDA cannot.
                    fallback: (h.device != "mps").then_some(false),
                    request_json: serde_json::to_string(&req)?,
                })?;
                report.run_id = Some(id);
                bar.println(format!(
                    "run {id}: {} on {} ({}), budget {}, {} threads, {:.2} M parameters",
                    h.workload,
                    h.device,
                    h.device_name,
                    format_bytes(h.budget_bytes),
                    h.threads,
                    h.parameters as f64 / 1e6
                ));
                report.hello = Some(h);
            }
            Ok(Event::Progress {
                batch,
                phase,
                step,
                of,
            }) => {
                let phase = match phase {
                    Phase::Warmup => "warm-up",
                    Phase::Timed => "timed",
                    Phase::Split => "split",
                };
                bar.set_message(format!(
                    "batch {batch}: {phase} step {step}/{of}{}",
                    best_so_far(&report.points)
                ));
            }
            Ok(Event::Point(p)) => {
                if let Some(id) = report.run_id {
                    let seq = u32::try_from(report.points.len()).unwrap_or(u32::MAX);
                    ledger.add_point(id, seq, &p)?;
                }
                bar.println(point_line(&p));
                report.points.push(p);
            }
            Ok(Event::Warning { message }) => {
                if !report.warnings.contains(&message) {
                    bar.println(format!("warning: {message}"));
                    report.warnings.push(message);
                }
            }
            Ok(Event::Result(s)) => report.summary = Some(s),
            Ok(Event::Error { code, message }) => {
                report.error = Some(ErrorReport { code, message })
            }
        }
    }
    let (status, stderr_tail) = worker.wait()?;
    bar.finish_and_clear();

    let (run_status, note) = if report.summary.is_some() && status.success() {
        (RunStatus::Complete, None)
    } else if report.error.is_some() {
        (
            RunStatus::Failed,
            report.error.as_ref().map(|e| e.message.clone()),
        )
    } else {
        let why = if INTERRUPTED.load(Ordering::SeqCst) {
            "interrupted (Ctrl-C)".to_owned()
        } else {
            format!("the worker {}", describe_exit(&status))
        };
        let mut note = format!("{why} after {} point(s)", report.points.len());
        if let Some(last) = stderr_tail
            .iter()
            .chain(garbage.iter())
            .rev()
            .find(|l| !l.trim().is_empty())
        {
            note.push_str(&format!("; its last words: {}", last.trim()));
        }
        report.error = Some(ErrorReport {
            code: "interrupted".into(),
            message: note.clone(),
        });
        (RunStatus::Interrupted, Some(note))
    };
    if report.summary.is_none() && !report.points.is_empty() {
        // A partial answer from the points that finished.
        let budget = report.hello.as_ref().map_or(u64::MAX, |h| h.budget_bytes);
        report.summary = Some(summarize(&report.points, Limit::Error, budget));
    }
    if let Some(id) = report.run_id {
        let summary = if run_status == RunStatus::Complete {
            report.summary.as_ref()
        } else {
            None
        };
        ledger.finish_run(
            id,
            run_status,
            summary.or(report.summary.as_ref()),
            note.as_deref(),
        )?;
    }
    report.status = run_status.as_str();
    if report.run_id.is_none() {
        report.status = "error";
    }

    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&report);
    }
    Ok(match (report.run_id, run_status) {
        (Some(_), RunStatus::Complete) => ExitCode::SUCCESS,
        (None, _) => {
            let msg = report.error.as_ref().map_or_else(
                || {
                    format!(
                        "the worker {} before it started measuring",
                        describe_exit(&status)
                    )
                },
                |e| e.message.clone(),
            );
            eprintln!("headroom: error: {msg}");
            if report.error.is_none() {
                for l in &stderr_tail {
                    eprintln!("  worker: {l}");
                }
            }
            ExitCode::from(2)
        }
        _ => ExitCode::from(3),
    })
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
        .map(|(b, s)| format!(" · best so far {s:.1} samples/s at batch {b}"))
        .unwrap_or_default()
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

fn point_line(p: &Point) -> String {
    match p.status {
        PointStatus::Ok => format!(
            "  batch {:>6}  {:>12.1} samples/s  p50 {:>9} ms  p95 {:>9} ms  peak {}",
            p.batch,
            p.samples_per_s.unwrap_or(0.0),
            opt_ms(p.step_ms_p50),
            opt_ms(p.step_ms_p95),
            p.peak_bytes.map_or_else(|| "-".into(), format_bytes)
        ),
        s => format!(
            "  batch {:>6}  {}: {}",
            p.batch,
            s.as_str(),
            p.message.as_deref().unwrap_or("")
        ),
    }
}

fn print_human(r: &Report) {
    if r.points.is_empty() {
        return;
    }
    println!(
        "{:>7} {:>11} {:>12} {:>10} {:>10} {:>9} {:>9} {:>9} {:>10}",
        "batch", "status", "samples/s", "p50 ms", "p95 ms", "data ms", "fwd ms", "bwd ms", "peak"
    );
    for p in &r.points {
        println!(
            "{:>7} {:>11} {:>12} {:>10} {:>10} {:>9} {:>9} {:>9} {:>10}",
            p.batch,
            p.status.as_str(),
            p.samples_per_s
                .map_or_else(|| "-".into(), |s| format!("{s:.1}")),
            opt_ms(p.step_ms_p50),
            opt_ms(p.step_ms_p95),
            opt_ms(p.data_ms),
            opt_ms(p.forward_ms),
            opt_ms(p.backward_ms),
            p.peak_bytes
                .or(p.predicted_peak_bytes)
                .map_or_else(|| "-".into(), format_bytes),
        );
    }
    if let Some(s) = &r.summary {
        let b = |v: Option<u32>| v.map_or_else(|| "-".into(), |x| x.to_string());
        println!();
        println!(
            "best batch {} · knee {} · largest that fits {} (stopped by {})",
            b(s.best_batch),
            b(s.knee_batch),
            b(s.max_fit_batch),
            s.limit
        );
        match s.recommended_batch {
            Some(rb) => println!("recommended: batch {rb} — {}", s.reason),
            None => println!("no recommendation: {}", s.reason),
        }
    }
    if let Some(id) = r.run_id {
        println!("recorded as run {id} ({}) in {}", r.status, r.ledger);
    }
}
