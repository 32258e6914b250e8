//! `headroom sweep`: checks the arguments, starts the worker, records every point in the ledger
//! as it arrives, shows progress, and prints the table and recommendation (or one JSON document).

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Result};
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

mod output;

use crate::supervisor::{describe_exit, MemoryWatch, Output, Worker};

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
        prior: Vec::new(),
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

/// How many times the supervisor restarts a worker it stopped for passing the budget.
const MAX_RESTARTS: u32 = 8;

/// The worker checks each point's peak against the budget itself and records a point past it as
/// over budget with its measurements. The supervisor is the safety net for runaway growth: it stops
/// the worker only past this hard limit, a margin above the budget, so a point that ends a little
/// over is measured and reported rather than cut short.
fn hard_limit(budget: u64) -> u64 {
    budget + (budget / 20).max(128 << 20)
}

/// How one worker of a run ended.
enum WorkerEnd {
    /// It exited (or died) by itself.
    Exited {
        status: std::process::ExitStatus,
        stderr_tail: Vec<String>,
        garbage: Vec<String>,
    },
    /// The supervisor stopped it at `batch` because its memory reached `rss` bytes.
    OverBudget { batch: Option<u32>, rss: u64 },
}

/// The state of a run across its workers.
struct Session<'a> {
    req: &'a SweepRequest,
    ledger: &'a Ledger,
    bar: &'a ProgressBar,
    quiet: bool,
    report: Report,
}

impl Session<'_> {
    /// Runs one worker, continuing from the points already in the report.
    fn run_worker(&mut self) -> Result<WorkerEnd> {
        let mut req = self.req.clone();
        req.prior.clone_from(&self.report.points);
        let mut worker = Worker::start(&req)?;
        self.bar.set_message(format!(
            "starting worker (pid {}) for {} on {}",
            worker.pid(),
            req.workload,
            req.device
        ));
        let mut watch = None;
        let mut current = None;
        let mut garbage = Vec::new();
        while let Some(out) = worker.next_output() {
            let event = match out {
                Output::Event(e) => *e,
                Output::Garbage(line) => {
                    garbage.push(line);
                    continue;
                }
            };
            match event {
                Event::Hello(h) => {
                    // On the CPU the budget is the worker's own memory: watch it.
                    if h.device == "cpu" {
                        watch = Some(worker.watch_memory(hard_limit(h.budget_bytes)));
                    }
                    self.on_hello(h)?;
                }
                Event::Progress {
                    batch,
                    phase,
                    step,
                    of,
                } => {
                    current = Some(batch);
                    let phase = match phase {
                        Phase::Setup => "preparing inputs",
                        Phase::Warmup => "warm-up",
                        Phase::Timed => "timed",
                        Phase::Split => "split",
                    };
                    let steps = if of > 0 {
                        format!(" step {step}/{of}")
                    } else {
                        String::new()
                    };
                    self.bar.set_message(format!(
                        "batch {batch}: {phase}{steps}{}",
                        best_so_far(&self.report.points)
                    ));
                }
                Event::Point(p) => {
                    current = None;
                    self.add_point(p)?;
                }
                Event::Warning { message } => {
                    if !self.report.warnings.contains(&message) {
                        self.say(format!("warning: {message}"));
                        self.report.warnings.push(message);
                    }
                }
                Event::Result(s) => self.report.summary = Some(s),
                Event::Error { code, message } => {
                    self.report.error = Some(ErrorReport { code, message })
                }
            }
        }
        let tripped = watch.and_then(MemoryWatch::finish);
        let (status, stderr_tail) = worker.wait()?;
        Ok(match tripped {
            Some(rss) => WorkerEnd::OverBudget {
                batch: current,
                rss,
            },
            None => WorkerEnd::Exited {
                status,
                stderr_tail,
                garbage,
            },
        })
    }

    fn on_hello(&mut self, h: Hello) -> Result<()> {
        if h.protocol != PROTOCOL_VERSION {
            bail!(
                "the worker speaks protocol {}, this headroom {}; reinstall headroom",
                h.protocol,
                PROTOCOL_VERSION
            );
        }
        if self.report.run_id.is_some() {
            // A restarted worker of the same run.
            self.report.hello = Some(h);
            return Ok(());
        }
        let git = git_state(&std::env::current_dir().unwrap_or_default());
        let id = self.ledger.begin_run(&NewRun {
            kind: "sweep".into(),
            host: super::hostname(),
            device: h.device.clone(),
            device_name: h.device_name.clone(),
            workload: h.workload.clone(),
            dtype: self.req.dtype.as_str().into(),
            mode: self.req.mode.as_str().into(),
            libtorch: h.libtorch.clone(),
            git_commit: git.commit,
            git_dirty: git.dirty,
            budget_bytes: Some(h.budget_bytes),
            // Only MPS can fall back to the CPU; built-in workloads on CPU/CUDA cannot.
            fallback: (h.device != "mps").then_some(false),
            request_json: serde_json::to_string(self.req)?,
            owner_pid: Some(std::process::id()),
        })?;
        self.report.run_id = Some(id);
        #[allow(clippy::cast_precision_loss)]
        let millions = h.parameters as f64 / 1e6;
        self.say(format!(
            "run {id}: {} on {} ({}), budget {}, {} threads, {millions:.2} M parameters",
            h.workload,
            h.device,
            h.device_name,
            format_bytes(h.budget_bytes),
            h.threads,
        ));
        self.report.hello = Some(h);
        Ok(())
    }

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

    /// Records a point in the ledger the moment it arrives.
    fn add_point(&mut self, p: Point) -> Result<()> {
        if let Some(id) = self.report.run_id {
            let seq = u32::try_from(self.report.points.len()).unwrap_or(u32::MAX);
            self.ledger.add_point(id, seq, &p)?;
        }
        self.say(output::point_line(&p));
        self.report.points.push(p);
        Ok(())
    }
}

pub fn run(args: &SweepArgs) -> Result<ExitCode> {
    let req = request(args)?;
    let ledger = super::open_ledger()?;
    catch_interrupt();
    let bar = progress_bar(args.json);
    let report = Report {
        status: "running",
        run_id: None,
        ledger: ledger.path().display().to_string(),
        hello: None,
        points: Vec::new(),
        summary: None,
        warnings: Vec::new(),
        error: None,
    };
    let mut session = Session {
        req: &req,
        ledger: &ledger,
        bar: &bar,
        quiet: args.json,
        report,
    };
    let mut restarts = 0;
    let (status, stderr_tail, garbage) = loop {
        match session.run_worker()? {
            WorkerEnd::Exited {
                status,
                stderr_tail,
                garbage,
            } => break (status, stderr_tail, garbage),
            WorkerEnd::OverBudget { batch, rss } => {
                let budget = session.report.hello.as_ref().map_or(0, |h| h.budget_bytes);
                let during = batch.map_or_else(
                    || "between two points".into(),
                    |b| format!("during batch {b}"),
                );
                let message = format!(
                    "the worker's memory reached {} {during}, past the {} budget and the supervisor's \
                     hard limit of {}; the supervisor stopped it before the machine could swap",
                    format_bytes(rss),
                    format_bytes(budget),
                    format_bytes(hard_limit(budget))
                );
                if restarts >= MAX_RESTARTS {
                    session.report.error = Some(ErrorReport {
                        code: "over_budget".into(),
                        message: format!(
                            "{message}; gave up after {MAX_RESTARTS} restarts — raise --budget"
                        ),
                    });
                    break (std::process::ExitStatus::default(), Vec::new(), Vec::new());
                }
                restarts += 1;
                match batch {
                    Some(batch) => {
                        let mut p = Point::failed(batch, PointStatus::OverBudget, message);
                        p.peak_process_bytes = Some(rss);
                        p.peak_bytes = Some(rss);
                        session.add_point(p)?;
                    }
                    // Between two points (memory the last one left behind): no point to blame;
                    // a fresh worker starts from a clean process.
                    None => {
                        let w = format!("{message}; restarted the worker");
                        session.say(format!("warning: {w}"));
                        session.report.warnings.push(w);
                    }
                }
            }
        }
    };
    bar.finish_and_clear();
    let mut report = session.report;

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
        ledger.finish_run(id, run_status, report.summary.as_ref(), note.as_deref())?;
    }
    report.status = if report.run_id.is_some() {
        run_status.as_str()
    } else {
        "error"
    };

    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        output::print_human(&report);
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
