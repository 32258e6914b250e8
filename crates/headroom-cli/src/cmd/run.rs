//! `headroom run -- CMD ...`: a training command run and watched from outside, its memory,
//! steps and epochs in the ledger as they happen, and the leak verdict at the end; `--sweep`
//! runs it once per value of its placeholders.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use headroom_core::jobs::watch::{describe_signal, run_command, WatchOptions, WatchOutcome};
use headroom_core::readings::{batch_from_args, EpochMatcher, DEFAULT_EPOCH_PATTERN};
use headroom_model::budget::{format_bytes, BudgetSpec};
use headroom_model::requests::leak_thresholds;

/// Where a signal the user sent `headroom run` goes: the run's own flag, which it polls while the
/// command runs (the pattern of `sweep`'s Ctrl-C token).
static SIGNALLED: OnceLock<Arc<AtomicI32>> = OnceLock::new();

extern "C" fn on_signal(sig: libc::c_int) {
    if let Some(flag) = SIGNALLED.get() {
        flag.store(sig, Ordering::SeqCst);
    }
}

/// Ctrl-C, SIGTERM and SIGHUP are caught and handed to the run, which forwards them to the
/// command and closes its record once the command is gone.
fn catch_signals() -> Arc<AtomicI32> {
    let flag = Arc::clone(SIGNALLED.get_or_init(Arc::default));
    // SAFETY: the handler only loads an initialised OnceLock and stores to an atomic, which are
    // async-signal-safe.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
    flag
}

/// Arguments of `headroom numerics`: `headroom run --numerics DTYPE`, stopped after a few
/// iterations unless `--steps` says otherwise; or, with `--workload`, a built-in model or a
/// TorchScript file in the worker.
#[derive(Debug, clap::Args)]
pub struct NumericsArgs {
    /// What the compared side runs in: f32, or autocast to bf16 / f16 (with --workload, the
    /// compared copy's weights and inputs cast to it).
    #[arg(long, default_value = "f32", value_parser = ["f32", "bf16", "f16"])]
    dtype: String,
    /// Compare a built-in model (mlp, cnn, vit-tiny, gpt-tiny, matmul) or a TorchScript file
    /// (model.pt) instead of a command: on --device (default: the accelerator, else the CPU)
    /// against a CPU copy in f32 with the same weights, at --batch (default 8).
    #[arg(long, conflicts_with_all = ["command", "project", "notebook"])]
    workload: Option<String>,
    /// With --workload: one sample's shape without the batch (required for a TorchScript file).
    #[arg(long, requires = "workload")]
    input_shape: Option<String>,
    /// Where the f32 reference runs: on the CPU, or on the compared side's device (so a
    /// --dtype bf16 comparison there is the dtype's own difference, without the device's).
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "device"])]
    reference: String,
    #[command(flatten)]
    run: RunArgs,
}

/// `headroom numerics`.
pub fn numerics(a: NumericsArgs) -> Result<ExitCode> {
    if let Some(w) = &a.workload {
        return numerics_of_workload(&a, w);
    }
    let mut r = a.run;
    if r.numerics.is_some() {
        bail!("`headroom numerics` takes --dtype; --numerics is `headroom run`'s");
    }
    r.numerics = Some(a.dtype);
    r.numerics_on_device = a.reference == "device";
    r.steps = r.steps.or(Some(3));
    run(&r)
}

/// `headroom numerics --workload W`: the comparison in the worker, recorded as a `numerics` run.
fn numerics_of_workload(a: &NumericsArgs, workload: &str) -> Result<ExitCode> {
    use headroom_core::jobs::{self, sweep::CancelToken};
    let r = &a.run;
    let req = headroom_model::requests::NumericsInput {
        what: headroom_model::requests::WorkloadInput {
            workload: workload.to_owned(),
            input_shape: a.input_shape.clone(),
            device: r.device.clone().unwrap_or_else(|| "auto".into()),
            dtype: a.dtype.clone(),
        },
        batch: r.batch.unwrap_or(8),
        tolerance: r.tolerance,
        threads: None,
        perturb: std::env::var("HEADROOM_NUMERICS_PERTURB")
            .ok()
            .filter(|p| !p.is_empty()),
        reference_on_device: a.reference == "device",
    }
    .request()?;
    let ledger = super::open_ledger()?;
    r.record.attach(&ledger, None, r.json)?;
    let exe = jobs::worker_binary()?;
    let cancel = CancelToken::new("interrupted");
    let out = jobs::numerics::run_numerics(&exe, &req, &ledger, &cancel)?;
    if r.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for w in &out.warnings {
            eprintln!("warning: {w}");
        }
        if let Some(n) = &out.report {
            println!(
                "{workload} on {} in {} against {} ({}), {:.2} s",
                n.device, n.dtype, n.reference, n.mode, n.seconds
            );
            let rows: Vec<&headroom_model::numerics::Compared> =
                n.layers.iter().chain(&n.output).collect();
            if !rows.is_empty() {
                println!("\n{:<28} {:>12} {:>12}", "layer", "largest abs", "relative");
                for c in rows {
                    let mark = if c.rel > n.tolerance {
                        "  past the tolerance"
                    } else {
                        ""
                    };
                    println!(
                        "{:<28} {:>12} {:>12}{mark}",
                        c.name,
                        headroom_model::numerics::small(c.abs),
                        headroom_model::numerics::small(c.rel)
                    );
                }
            }
            if let Some(g) = n.grads.first() {
                println!(
                    "worst of {} gradients: `{}` {} relative",
                    n.grads.len(),
                    g.name,
                    headroom_model::numerics::small(g.rel)
                );
            }
            println!("\n{}", n.verdict());
        }
    }
    Ok(super::job_exit(
        out.run_id,
        out.status,
        out.error.as_ref(),
        r.json,
    ))
}

/// Arguments of `headroom run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A regex whose first group is the epoch number in the command's output [default: the
    /// epochs Headroom's observer sees (a DataLoader's passes), else lines like `epoch 3`].
    #[arg(long)]
    epoch_regex: Option<String>,
    /// Do not observe a Python program from inside (steps, DataLoader, device memory come then
    /// only from `headroom-step`/`headroom-data` lines and the epoch regex).
    #[arg(long)]
    no_instrument: bool,
    /// Milliseconds between memory readings.
    #[arg(long, default_value_t = 500)]
    interval_ms: u64,
    /// The batch size, when the command line does not say it (--batch-size, --bs, -b).
    #[arg(long)]
    batch: Option<u32>,
    /// Leak threshold in percent over --leak-over epochs [default: the configuration's
    /// epochs.leak_growth, +26 %].
    #[arg(long)]
    leak_threshold: Option<f64>,
    /// [default: the configuration's epochs.over_epochs, 10]
    #[arg(long)]
    leak_over: Option<u32>,
    /// Print a JSON summary at the end on stdout (the command's own output passes through on
    /// stderr).
    #[arg(long)]
    json: bool,
    /// On MPS: have PyTorch log every operation with its GPU time and total them per operator
    /// (for the "one layer is slow" rule of `headroom decide`; slows the run while it logs).
    #[arg(long)]
    profile_ops: bool,
    /// Run the command once per value, with `{NAME}` in its arguments replaced:
    /// `--sweep bs=16,32,64 -- python train.py --batch-size {bs}` (repeat for a grid).
    /// `--sweep batch=auto` runs the sweep planner on the command instead: the memory line from
    /// two small batches, the largest batch predicted under the budget verified, the knee;
    /// each start stopped once its step time settles.
    #[arg(long, value_name = "NAME=V1,V2")]
    sweep: Vec<String>,
    /// Run a project (`headroom project add`): its command, in its folder, with its Python.
    #[arg(long)]
    project: Option<String>,
    /// With `batch=auto` and `{device}` in the command: the baseline and the accelerator
    /// (`cpu,mps`); the accelerator is swept, then the baseline runs at the recommended batch
    /// for the speed-up. `cpu@N` gives that side N threads.
    #[arg(long, value_name = "BASE,ACCEL")]
    device_sweep: Option<String>,
    /// Fill in `{device}` for a single run.
    #[arg(long)]
    device: Option<String>,
    /// With `batch=auto`: the first batch.
    #[arg(long, default_value_t = 16)]
    start_batch: u32,
    /// With `batch=auto`: the largest batch it may try.
    #[arg(long, default_value_t = 65536)]
    max_batch: u32,
    /// With `batch=auto`: the longest one start may run before it is stopped unsettled.
    #[arg(long, default_value_t = 180)]
    point_seconds: u64,
    /// With `batch=auto`: begin the next start while this one is measured, each waiting before
    /// its first batch until its turn, so its start-up overlaps (auto: on a CUDA device, whose
    /// memory is its own; off on the CPU and MPS, where a waiting start holds memory the
    /// measured one shares).
    #[arg(long, default_value = "auto", value_name = "auto|on|off")]
    prestart: String,
    /// Stop the command (each run of a sweep) after this many seconds.
    #[arg(long)]
    max_seconds: Option<u64>,
    /// Stop the command after this many steps: lines it prints starting with `headroom-step`
    /// (one per training step; they also give the step time and throughput).
    #[arg(long)]
    steps: Option<u32>,
    /// Memory budget for the command's processes, a size (6GiB) or a share of RAM (50%); over
    /// it, the command is stopped and its run recorded as over budget. A sweep defaults to 90 %
    /// of the memory available when it starts; a single run has none unless given.
    #[arg(long)]
    budget: Option<String>,
    /// With --sweep over the batch size: write the sweep's chart (throughput and peak memory
    /// over batch, as a built-in sweep's) to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    chart: Option<std::path::PathBuf>,
    /// A metric the command prints, kept with the run for `ledger compare`: NAME=REGEX, the
    /// regex's first group the value (repeatable). Lines `headroom-metric NAME VALUE` are read
    /// without it.
    #[arg(long, value_name = "NAME=REGEX")]
    metric: Vec<String>,
    /// Report a DataLoader that gives no batch for this many seconds (a hang), with what to
    /// try; 0 turns it off.
    #[arg(long, default_value_t = headroom_core::instrument::DEFAULT_STALL_S, value_name = "SECONDS")]
    stall_after: u32,
    /// Run the program's forward passes under autocast with this dtype (bf16, f16), or with
    /// the same hooks and none (off), without changing the script; `--sweep amp=off,bf16`
    /// measures both (a command without `{amp}` gets it this way).
    #[arg(long, value_name = "off|bf16|f16")]
    amp: Option<String>,
    /// Release memory at every epoch end the observer sees, without changing the script:
    /// `gc.collect()` (gc), the device's `empty_cache()` (empty-cache), both, or none; the
    /// epoch's memory is read after it. `--sweep release=none,both` runs with and without: a
    /// leak that survives the release is a leak, growth the release flattens is the cache.
    #[arg(long, value_name = "none|gc|empty-cache|both")]
    release: Option<String>,
    /// Profile N training iterations after the warm-up with torch.profiler (host and, on
    /// CUDA, device activity), without changing the script: the top operators, the ones long
    /// on the host and short on the device (a sync, an unsupported operator), and a Chrome
    /// trace for Perfetto kept in Headroom's data folder. The profiled iterations are not
    /// timed.
    #[arg(long, value_name = "N")]
    profile_window: Option<u32>,
    /// The iterations before the profiler window.
    #[arg(
        long,
        default_value_t = 10,
        value_name = "N",
        requires = "profile_window"
    )]
    profile_warmup: u32,
    /// Compare the model with a CPU copy in f32, layer by layer, at one training iteration
    /// (`headroom numerics` runs this): the compared side runs where the program keeps the
    /// model, in f32 or under autocast (bf16, f16).
    #[arg(long, value_name = "DTYPE", value_parser = ["f32", "bf16", "f16"])]
    numerics: Option<String>,
    /// The largest relative error (over the reference's largest magnitude) `--numerics` lets
    /// pass.
    #[arg(long, default_value_t = 1e-3, value_name = "X")]
    tolerance: f64,
    /// `headroom numerics --reference device`: the f32 reference on the program's device.
    #[arg(skip)]
    numerics_on_device: bool,
    /// A Jupyter notebook to run top to bottom in a fresh kernel (`jupyter execute`, from
    /// nbclient), observed as a script is: its DataLoaders' passes are its epochs, and every
    /// option above applies (`--release both`, `--sweep release=none,both`). A notebook you
    /// work in is observed with `headroom run -- jupyter lab`: every kernel it starts reports.
    #[arg(long, value_name = "NB.ipynb")]
    notebook: Option<std::path::PathBuf>,
    /// Start the run in a session of its own and return at once: it goes on when the terminal
    /// or the ssh connection closes (on macOS, under `caffeinate -i`, the Mac stays awake).
    /// Follow it with `headroom runs follow ID`, end it with `headroom runs stop ID`.
    #[arg(long)]
    detach: bool,
    /// Rewrite this JSON file with the run's progress as it goes (steps, epochs, memory); a
    /// detached run keeps it in its folder.
    #[arg(long, value_name = "FILE", hide = true)]
    status_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    record: super::record::RecordArgs,
    /// The command, after `--` (or the project's, with --project).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// The outcome for people, on stderr (shared with `headroom watch`).
pub fn summary(o: &WatchOutcome) {
    eprintln!(
        "headroom: run {} · {:.1} s · peak {} (process tree) · {} readings · {} epoch(s) · batch {} · torch {} · fallback {}{}",
        if o.run_id > 0 {
            o.run_id.to_string()
        } else {
            "(not yet in the ledger)".into()
        },
        o.seconds,
        format_bytes(o.peak_tree_bytes),
        o.readings,
        o.epochs.len(),
        o.batch.map_or_else(|| "unknown".into(), |b| b.to_string()),
        o.torch_version.as_deref().unwrap_or("unknown"),
        if o.fallback { "yes" } else { "no" },
        if o.fallback_ops.is_empty() {
            String::new()
        } else {
            format!(" ({})", o.fallback_ops.join(", "))
        }
    );
    if let Some(sig) = o.signal.filter(|_| !o.stopped_at_limit && !o.over_budget) {
        eprintln!("headroom: the command was {}", describe_signal(sig));
    }
    if o.interrupted {
        eprintln!("headroom: stopped by you; the run is kept as interrupted");
    }
    eprintln!("headroom: {}", o.verdict.reason);
    if let Some(ob) = &o.observed {
        observed_summary(ob);
    }
    if o.steps > 0 {
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.1}"));
        eprintln!(
            "headroom: {} steps · p50 {} ms · p95 {} ms{}",
            o.steps,
            ms(o.step_ms_p50),
            ms(o.step_ms_p95),
            o.samples_per_s.map_or_else(String::new, |s| format!(
                " · {} samples/s",
                headroom_model::stats::sig3(s)
            ))
        );
    }
    if let Some(v) = &o.pipeline {
        eprintln!("headroom: {v}");
    }
    if let Some(c) = &o.conditions {
        if let Some(line) = conditions_line(c, o.joules_per_sample()) {
            eprintln!("headroom: {line}");
        }
        if !c.unavailable.is_empty() {
            eprintln!(
                "headroom: not read on this machine: {}",
                c.unavailable.join("; ")
            );
        }
    }
    for w in o
        .load
        .iter()
        .flat_map(|l| l.warnings_for(&format!("run {}", o.run_id)))
        .chain(o.condition_warnings())
    {
        eprintln!("headroom: warning: {w}");
    }
    if let Some(b) = o.gpu_busy {
        eprintln!("headroom: GPU busy {:.0} % on average", b * 100.0);
    }
    let total: f64 = o.op_times.iter().map(|t| t.gpu_ms).sum();
    for t in o.op_times.iter().take(5) {
        eprintln!(
            "headroom:   {:>10.1} ms GPU ({:>4.1} %) in {:>6} calls  {}",
            t.gpu_ms,
            100.0 * t.gpu_ms / total.max(f64::MIN_POSITIVE),
            t.calls,
            t.name
        );
    }
}

/// What the observer saw inside the program, for people.
/// The machine's state while a run was timed, in a line: power, energy per sample, heat.
fn conditions_line(
    c: &headroom_model::conditions::TimedConditions,
    joules_per_sample: Option<f64>,
) -> Option<String> {
    let mut parts = Vec::new();
    let w = |s: &headroom_model::conditions::Span| format!("{:.0} W (max {:.0})", s.mean, s.max);
    if let Some(g) = &c.gpu_watts {
        parts.push(format!("GPU {}", w(g)));
    }
    if let Some(p) = &c.cpu_watts {
        parts.push(format!("CPU {}", w(p)));
    }
    if let Some(u) = &c.gpu_util {
        parts.push(format!("GPU busy {:.0} %", u.mean * 100.0));
    }
    if let Some(j) = c.energy_j {
        parts.push(format!(
            "{j:.0} J ({})",
            c.energy_source.as_deref().unwrap_or("energy")
        ));
    }
    if let Some(j) = joules_per_sample {
        parts.push(format!("{:.3} J per sample ({:.1} samples/J)", j, 1.0 / j));
    }
    if let Some(t) = &c.temp_c {
        parts.push(format!("up to {:.0} °C", t.max));
    }
    if let Some(s) = c.throttled_share {
        parts.push(format!("throttled {:.0} % of the time", s * 100.0));
    }
    if c.on_battery == Some(true) {
        parts.push("on battery".into());
    }
    (!parts.is_empty()).then(|| format!("while timed: {}", parts.join(" · ")))
}

fn observed_summary(ob: &headroom_core::instrument::Observed) {
    eprintln!("headroom: {}", ob.loop_shape());
    let mut parts = Vec::new();
    if let Some(d) = &ob.device {
        parts.push(format!("device {d}"));
    }
    if let Some(p) = ob.peak_device_bytes {
        parts.push(format!("device peak {}", format_bytes(p)));
    }
    if !ob.autocast.is_empty() {
        parts.push(format!("autocast {}", ob.autocast.join(", ")));
    }
    if ob.compiled {
        parts.push("torch.compile".into());
    }
    if ob.checkpointing {
        parts.push("activation checkpointing".into());
    }
    if let Some(r) = ob.release_forced.as_deref().filter(|r| *r != "none") {
        parts.push(format!("release {r} at every epoch end (set by Headroom)"));
    }
    if let Some(l) = &ob.loader {
        parts.push(format!(
            "DataLoader num_workers={} pin_memory={} persistent_workers={}{}",
            l.num_workers,
            l.pin_memory,
            l.persistent_workers,
            l.start_method
                .as_deref()
                .map_or_else(String::new, |m| format!(" start={m}"))
        ));
    }
    if let Some(c) = ob.copy_share.filter(|c| *c >= 0.005) {
        parts.push(format!(
            "host-to-device copies {:.0} % of the step",
            c * 100.0
        ));
    }
    if let Some(n) = ob.syncs_per_step {
        parts.push(format!(
            "{n} host sync{} per iteration{}{}",
            if n == 1 { "" } else { "s" },
            ob.sync_site
                .as_deref()
                .map_or_else(String::new, |s| format!(" (first: {s})")),
            ob.sync_share
                .map_or_else(String::new, |s| format!(", {:.0} % of the step", s * 100.0))
        ));
    }
    if let Some(seed) = ob.seed {
        parts.push(format!("seed {seed}"));
    }
    if ob.stepping_processes > 1 {
        parts.push(format!("{} processes stepping", ob.stepping_processes));
    }
    if !parts.is_empty() {
        eprintln!("headroom: seen inside: {}", parts.join(" · "));
    }
    if let Some(n) = &ob.numerics {
        eprintln!("headroom: {}", n.verdict());
        if let Some(e) = n.first_over().or_else(|| n.worst()) {
            eprintln!(
                "headroom:   `{}`: largest difference {}, {} of the reference's largest value; {} layers compared in {:.1} s ({}, both in {})",
                e.name,
                headroom_model::numerics::small(e.abs),
                headroom_model::numerics::small(e.rel),
                n.layers.len(),
                n.seconds,
                n.reference,
                n.mode
            );
        }
    }
    if let Some(p) = &ob.profile {
        eprintln!("headroom: {}", p.describe());
    }
}

/// `run --sweep`: the command once per combination, each its own run in the ledger, then a table.
fn sweep_command(
    a: &RunArgs,
    command: &[String],
    matcher: &EpochMatcher,
    opts: &WatchOptions,
    ledger: &headroom_store::ledger::Ledger,
) -> Result<ExitCode> {
    use headroom_model::scriptsweep::{combinations, parse_axes, substitute};
    let axes = parse_axes(&a.sweep)?;
    let combos = combinations(&axes);
    // An observer's axis (`amp`, `release`) without `{name}` in the command is set by the
    // observer, without a code change.
    let by_observer = |n: &str| {
        observer_axis(n).is_some() && !command.iter().any(|x| x.contains(&format!("{{{n}}}")))
    };
    type Setting = (String, String);
    let split = |combo: &[Setting]| -> (Vec<Setting>, Vec<Setting>) {
        combo.iter().cloned().partition(|(n, _)| by_observer(n))
    };
    // Check every substitution (and observer value) before running anything.
    let commands = combos
        .iter()
        .map(|c| {
            let (observer, rest) = split(c);
            for (n, v) in &observer {
                check_observer(n, v)?;
            }
            Ok((observer, substitute(command, &rest)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut rows = Vec::new();
    for (i, (combo, (observer, command))) in combos.iter().zip(&commands).enumerate() {
        let label: Vec<String> = combo.iter().map(|(n, v)| format!("{n}={v}")).collect();
        eprintln!("headroom: [{}/{}] {}", i + 1, combos.len(), label.join(" "));
        let mut env = opts.env.clone();
        for (n, v) in observer {
            if let Some((_, var, _, _)) = observer_axis(n) {
                env.push(((*var).to_owned(), v.clone()));
            }
        }
        let o = WatchOptions {
            batch: a.batch.or_else(|| batch_from_args(command)),
            env,
            ..opts.clone()
        };
        let out = run_command(command, matcher, &o, ledger)?;
        rows.push((label.join(" "), out));
    }
    if a.json {
        let doc: Vec<serde_json::Value> = rows
            .iter()
            .map(|(label, out)| serde_json::json!({ "combination": label, "run": out }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        eprintln!(
            "{:<28} {:>6} {:>8} {:>12} {:>6} {:>9} {:>10} {:>7} {:>6} {:>5}  run",
            "combination",
            "exit",
            "seconds",
            "peak memory",
            "steps",
            "p50 ms",
            "samples/s",
            "data %",
            "epochs",
            "OOM"
        );
        let opt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.1}"));
        for (label, o) in &rows {
            eprintln!(
                "{:<28} {:>6} {:>8.1} {:>12} {:>6} {:>9} {:>10} {:>7} {:>6} {:>5}  {}{}",
                label,
                o.exit_code
                    .map_or_else(|| "signal".into(), |c| c.to_string()),
                o.seconds,
                format_bytes(o.peak_tree_bytes),
                o.steps,
                opt(o.step_ms_p50),
                opt(o.samples_per_s),
                o.data_share
                    .map_or_else(|| "-".to_owned(), |d| format!("{:.0}", d * 100.0)),
                o.epochs.len(),
                if o.over_budget {
                    "budget"
                } else if o.oom {
                    "yes"
                } else {
                    "no"
                },
                o.run_id,
                if o.stopped_at_limit {
                    " (stopped at the limit)"
                } else {
                    ""
                }
            );
        }
    }
    if let Some(path) = &a.chart {
        write_chart(path, &rows, opts.budget_bytes)?;
        eprintln!("headroom: chart written to {}", path.display());
    }
    let all_ok = rows
        .iter()
        .all(|(_, o)| o.exit_code == Some(0) || o.stopped_at_limit);
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// Whether a file can be written at `path`, tried now (a file made for the test is removed
/// again; an existing one is opened for writing and left as it was).
fn writable(path: &Path) -> std::io::Result<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    if !existed {
        std::fs::remove_file(path)?;
    }
    Ok(())
}

/// The chart of a sweep over the user's script: one point per combination at its batch.
fn write_chart(path: &Path, rows: &[(String, WatchOutcome)], budget: Option<u64>) -> Result<()> {
    let mut points = Vec::new();
    for (label, o) in rows {
        let Some(p) = o.as_point() else {
            bail!(
                "--chart draws throughput and memory over the batch size, and {label} has no batch: \
                 sweep the batch (`--sweep bs=16,32 -- … --batch-size {{bs}}`) or give --batch"
            );
        };
        if points
            .iter()
            .any(|q: &headroom_model::protocol::Point| q.batch == p.batch)
        {
            bail!(
                "--chart needs one combination per batch size, and batch {} comes twice; \
                 chart a sweep over the batch alone",
                p.batch
            );
        }
        points.push(p);
    }
    points.sort_by_key(|p| p.batch);
    let summary = headroom_model::summary::summarize(
        &points,
        headroom_model::planner::Limit::List,
        budget.unwrap_or(u64::MAX),
    );
    chart_points(path, &points, Some(&summary), budget)
}

/// Writes the sweep chart of `points` to `path`.
fn chart_points(
    path: &Path,
    points: &[headroom_model::protocol::Point],
    summary: Option<&headroom_model::protocol::SweepSummary>,
    budget: Option<u64>,
) -> Result<()> {
    let mut points = points.to_vec();
    points.sort_by_key(|p| p.batch);
    let svg = headroom_report::plot::sweep_svg(&headroom_report::plot::ChartSpec {
        points: &points,
        summary,
        budget_bytes: budget,
        width: 720,
        height: 560,
    })?;
    std::fs::write(path, svg)
        .map_err(|e| anyhow::anyhow!("cannot write the chart to {}: {e}", path.display()))?;
    Ok(())
}

/// The budget of `run`: `--budget` resolved against this machine's memory now; for a sweep
/// without one, the default share of what is available.
fn run_budget(spec: Option<&str>, sweep: bool) -> Result<Option<u64>> {
    let spec = match (spec, sweep) {
        (Some(s), _) => BudgetSpec::parse(s)?,
        (None, true) => BudgetSpec::Default,
        (None, false) => return Ok(None),
    };
    let Some(m) = headroom_probe::sysmem::system_memory() else {
        bail!("cannot read this machine's memory to set the budget; pass --budget with a size (e.g. 6GiB)");
    };
    Ok(Some(spec.resolve(m.total, m.available)))
}

/// A setting the observer applies without a code change: (axis, its environment variable, its
/// values, what they are).
type ObserverAxis = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
);

/// The settings the observer applies without a code change.
const OBSERVER_AXES: [ObserverAxis; 2] = [
    (
        "amp",
        headroom_core::instrument::AMP_ENV,
        &headroom_core::instrument::AMP_VALUES,
        "autocast's dtype, or off",
    ),
    (
        "release",
        headroom_core::instrument::RELEASE_ENV,
        &headroom_core::instrument::RELEASE_VALUES,
        "what to release at each epoch end",
    ),
];

fn observer_axis(name: &str) -> Option<&'static ObserverAxis> {
    OBSERVER_AXES.iter().find(|(n, ..)| *n == name)
}

/// One of the axis's values, else an error naming them.
fn check_observer(name: &str, v: &str) -> Result<()> {
    let Some((_, _, values, what)) = observer_axis(name) else {
        bail!("{name} is not a setting the observer applies");
    };
    if values.contains(&v) {
        Ok(())
    } else {
        bail!("{name} {v:?}: give one of {} ({what})", values.join(", "))
    }
}

/// The command to run, its folder and its project: the project's, or the one after `--`.
fn resolve_command(a: &RunArgs) -> Result<(Vec<String>, Option<headroom_core::project::Project>)> {
    if let Some(nb) = &a.notebook {
        if a.project.is_some() || !a.command.is_empty() {
            bail!(
                "--notebook runs the notebook itself; leave out --project and the command after --"
            );
        }
        return Ok((notebook_command(nb)?, None));
    }
    let Some(name) = &a.project else {
        if a.command.is_empty() {
            bail!("give the command to run after --, e.g. headroom run -- python train.py, or --project NAME");
        }
        return Ok((a.command.clone(), None));
    };
    if !a.command.is_empty() {
        bail!("--project {name} runs the project's own command; leave out the one after -- (or change the project with `headroom project add {name} --replace -- …`)");
    }
    let p = headroom_core::project::get(name)?;
    headroom_core::project::check_usable(&p)?;
    Ok((p.argv(), Some(p)))
}

/// The notebook run top to bottom in a fresh kernel by Headroom's runner (nbclient, as
/// `jupyter execute` does, its cells' outputs passed through live) under the Python of the
/// `jupyter-execute` found on `PATH` (the environment that has torch, as `python` is for a
/// script): refused, before anything runs, when the file is not a notebook or nbclient is not
/// there.
fn notebook_command(nb: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(nb)
        .with_context(|| format!("--notebook {}: cannot read it", nb.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "--notebook {}: not a Jupyter notebook (not JSON: {e})",
            nb.display()
        )
    })?;
    if !json.get("cells").is_some_and(serde_json::Value::is_array) {
        bail!(
            "--notebook {}: not a Jupyter notebook (it has no \"cells\")",
            nb.display()
        );
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|d| d.join("jupyter-execute"))
        .find(|p| p.is_file());
    let Some(execute) = found else {
        bail!("--notebook needs Jupyter's nbclient (`jupyter execute`) on PATH: install it where torch is (`python -m pip install nbclient ipykernel`) and activate that environment");
    };
    // The interpreter of that environment: `jupyter-execute`'s own (its first line), else the
    // `python3` beside it.
    let shebang = std::fs::read_to_string(&execute)
        .ok()
        .and_then(|t| t.lines().next().map(str::to_owned))
        .and_then(|l| l.strip_prefix("#!").map(|p| p.trim().to_owned()))
        .filter(|p| !p.contains(' ') && Path::new(p).is_file());
    let python = shebang.unwrap_or_else(|| execute.with_file_name("python3").display().to_string());
    let runner = headroom_core::instrument::notebook_runner()?;
    Ok(vec![
        python,
        runner.display().to_string(),
        nb.display().to_string(),
    ])
}

/// `{batch}` and `{device}` of a single run, from --batch and --device.
fn fill_single(a: &RunArgs, command: Vec<String>) -> Result<Vec<String>> {
    let has = |m: &str| command.iter().any(|x| x.contains(m));
    if has("{batch}") && a.batch.is_none() && a.sweep.is_empty() {
        bail!("the command has {{batch}}: give --batch N for one run, or --sweep batch=auto to sweep it");
    }
    if has("{device}") && a.device.is_none() && a.device_sweep.is_none() {
        bail!("the command has {{device}}: give --device NAME (cpu, mps, cuda) for one run, or --device-sweep cpu,mps with --sweep batch=auto");
    }
    let batch = a.batch.filter(|_| a.sweep.is_empty());
    Ok(headroom_core::project::fill(
        &command,
        batch,
        a.device.as_deref(),
    ))
}

/// `run --sweep batch=auto`: the planner on the user's command.
fn auto_sweep(
    a: &RunArgs,
    command: Vec<String>,
    project: Option<&headroom_core::project::Project>,
    opts: &WatchOptions,
    ledger: &headroom_store::ledger::Ledger,
) -> Result<ExitCode> {
    use headroom_core::jobs::sweep::Update;
    use headroom_core::jobs::usersweep::{parse_devices, run_script_sweep, Prestart, ScriptSweep};
    if a.sweep.len() != 1 {
        bail!("batch=auto sweeps the batch alone; leave out the other --sweep axes");
    }
    let devices = a
        .device_sweep
        .as_deref()
        .map(parse_devices)
        .transpose()?
        .unwrap_or_default();
    let spec = ScriptSweep {
        command,
        project: project.map(|p| p.name.clone()),
        start: a.start_batch,
        max: a.max_batch,
        budget: match &a.budget {
            Some(b) => BudgetSpec::parse(b)?,
            None => BudgetSpec::Default,
        },
        devices,
        point_limit: Duration::from_secs(a.point_seconds.max(1)),
        prestart: Prestart::parse(&a.prestart)?,
        watch: opts.clone(),
    };
    headroom_core::jobs::usersweep::check(&spec)?;
    let mut n = 0;
    let mut seen: Vec<headroom_model::protocol::Point> = Vec::new();
    let mut on = |u: &Update| match u {
        Update::Started { run_id, .. } => {
            eprintln!(
                "headroom: sweeping `{}` as run {run_id}",
                spec.command.join(" ")
            );
        }
        // A start (step 0); its steps are the command's own output, passed through.
        Update::Progress { batch, step: 0, .. } => {
            n += 1;
            eprintln!("headroom: [{n}] batch {batch}: starting the command");
        }
        Update::Point { point } => {
            eprintln!("{}", super::sweep::output::point_line(point));
            seen.push(point.clone());
        }
        // A point's cautions are said with the table, together.
        Update::Warning { message } if super::sweep::output::is_point_caution(&seen, message) => {}
        Update::Warning { message } => eprintln!("headroom: warning: {message}"),
        Update::WorkerStarted { .. } | Update::Progress { .. } => {}
    };
    let out = run_script_sweep(&spec, ledger, &mut on)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        // How long each start took, then the answer (last on screen).
        for t in &out.seconds {
            eprintln!(
                "headroom:   batch {}: {:.1} s, of which {} to its first step{}",
                t.batch,
                t.seconds,
                t.first_step_s
                    .map_or_else(|| "-".into(), |f| format!("{f:.1} s")),
                t.waited_s
                    .filter(|_| t.ahead)
                    .map_or_else(String::new, |w| format!(
                        " (begun ahead: {w:.1} s of its start-up overlapped the start before it)"
                    )),
            );
            if let Some(r) = t.release_s {
                eprintln!(
                    "headroom:     stopped, its processes gone {r:.1} s later{}",
                    t.device_free_s.map_or_else(String::new, |d| format!(
                        ", its device memory free {d:.1} s later"
                    ))
                );
            }
        }
        super::sweep::output::print_human(&out.sweep);
        if let Some(c) = &out.comparison {
            println!(
                "speed-up: {} (baseline run {})",
                c.sentence(),
                c.cpu_run_id.unwrap_or(0)
            );
        }
        super::sweep::output::print_answer(&out.sweep);
    }
    if let Some(path) = &a.chart {
        chart_points(
            path,
            &out.sweep.points,
            out.sweep.summary.as_ref(),
            out.sweep.hello.as_ref().map(|h| h.budget_bytes),
        )?;
        eprintln!("headroom: chart written to {}", path.display());
    }
    let stopped_by_error = out
        .sweep
        .summary
        .as_ref()
        .is_some_and(|s| s.limit == headroom_model::planner::Limit::Error.as_str());
    Ok(match out.sweep.status {
        // A point that failed (the script crashed at that batch): the answer from the others
        // stands, and the exit code says it is partial.
        headroom_core::jobs::JobStatus::Complete if stopped_by_error => ExitCode::from(3),
        headroom_core::jobs::JobStatus::Complete => ExitCode::SUCCESS,
        headroom_core::jobs::JobStatus::Interrupted => ExitCode::from(130),
        _ => ExitCode::from(3),
    })
}

/// The observer's settings from the arguments: the stall threshold, and autocast by `--amp`.
fn observer_env(a: &RunArgs) -> Result<Vec<(String, String)>> {
    let mut env = vec![(
        headroom_core::instrument::STALL_ENV.to_owned(),
        a.stall_after.to_string(),
    )];
    for (name, value, what) in [
        ("amp", &a.amp, "one dtype"),
        ("release", &a.release, "one release"),
    ] {
        let Some(v) = value else { continue };
        check_observer(name, v)?;
        if a.sweep
            .iter()
            .any(|s| s.trim_start().starts_with(&format!("{name}=")))
        {
            bail!("--{name} sets {what}; --sweep {name}=… sweeps it: give one of the two");
        }
        if let Some((_, var, _, _)) = observer_axis(name) {
            env.push(((*var).to_owned(), v.clone()));
        }
    }
    if let Some(n) = a.profile_window {
        env.extend(headroom_core::instrument::profile_env(n, a.profile_warmup)?);
    }
    if let Some(d) = &a.numerics {
        if !(a.tolerance.is_finite() && a.tolerance > 0.0) {
            bail!(
                "--tolerance {}: give a positive number, e.g. 1e-3",
                a.tolerance
            );
        }
        env.extend(headroom_core::instrument::numerics_env(d, a.tolerance));
        if a.numerics_on_device {
            env.push((
                "HEADROOM_NUMERICS_REFERENCE".to_owned(),
                "device".to_owned(),
            ));
        }
    }
    Ok(env)
}

pub fn run(a: &RunArgs) -> Result<ExitCode> {
    // Bad values are refused before anything runs.
    if a.batch == Some(0) {
        bail!("--batch 0: give a batch of 1 or more");
    }
    if !a.sweep.is_empty() {
        headroom_model::scriptsweep::parse_axes(&a.sweep)?;
    }
    if let Some(d) = &a.device_sweep {
        headroom_core::jobs::usersweep::parse_devices(d)?;
    }
    let (command, project) = resolve_command(a)?;
    let auto = a.sweep.iter().any(|s| s.trim() == "batch=auto");
    let command = if auto {
        command
    } else {
        fill_single(a, command)?
    };
    let matcher = match &a.epoch_regex {
        Some(p) => EpochMatcher::new(p)?.given(),
        None => EpochMatcher::new(DEFAULT_EPOCH_PATTERN)?,
    };
    let th = leak_thresholds(
        a.leak_threshold,
        a.leak_over,
        &headroom_store::config::load()?.epochs,
    )?;
    if a.interval_ms == 0 {
        bail!("--interval-ms must be 1 or more");
    }
    let opts = WatchOptions {
        interval: Duration::from_millis(a.interval_ms),
        thresholds: th,
        batch: a.batch.or_else(|| batch_from_args(&command)),
        // From the observer (no second start of the interpreter to ask it).
        torch_version: None,
        profile_ops: a.profile_ops,
        max_time: a.max_seconds.map(Duration::from_secs),
        max_steps: a.steps,
        budget_bytes: run_budget(a.budget.as_deref(), !a.sweep.is_empty())?,
        instrument: !a.no_instrument,
        stdout_to_stderr: a.json,
        interrupt: catch_signals(),
        settle: false,
        dir: project.as_ref().map(|p| p.dir.clone()),
        env: observer_env(a)?,
        tag: project
            .as_ref()
            .map(|p| serde_json::json!({ "project": p.name })),
        metrics: a
            .metric
            .iter()
            .map(|m| headroom_core::jobs::watch::parse_metric_spec(m))
            .collect::<Result<_, _>>()?,
    };
    if a.device_sweep.is_some() && !auto {
        bail!("--device-sweep goes with --sweep batch=auto");
    }
    if a.chart.is_some() && a.sweep.is_empty() {
        bail!("--chart draws a sweep: add --sweep NAME=V1,V2 (over the batch size)");
    }
    if let Some(path) = &a.chart {
        writable(path).with_context(|| {
            format!(
                "--chart {}: the chart could not be written there (found before the sweep ran)",
                path.display()
            )
        })?;
    }
    if a.max_seconds == Some(0) || a.steps == Some(0) {
        bail!("--max-seconds and --steps must be 1 or more");
    }
    if a.detach {
        return detach(a, &command, project.as_ref());
    }
    let ledger = super::open_ledger_for_training()?;
    a.record.attach(&ledger, None, a.json)?;
    if auto {
        return auto_sweep(a, command, project.as_ref(), &opts, &ledger);
    }
    if !a.sweep.is_empty() {
        return sweep_command(a, &command, &matcher, &opts, &ledger);
    }
    let out = match &a.status_file {
        None => run_command(&command, &matcher, &opts, &ledger)?,
        Some(path) => {
            let mut last = std::time::Instant::now() - Duration::from_secs(10);
            let mut told = 0;
            headroom_core::jobs::watch::run_command_with(
                &command,
                &matcher,
                &opts,
                &ledger,
                &mut |p| {
                    // At most once a second, and at every new epoch.
                    if last.elapsed() < Duration::from_secs(1) && p.epochs.len() == told {
                        return;
                    }
                    (last, told) = (std::time::Instant::now(), p.epochs.len());
                    let status = headroom_core::jobs::detached::DetachedStatus {
                        run_id: p.run_id,
                        seconds: p.seconds,
                        steps: p.steps,
                        epochs: p.epochs.to_vec(),
                        tree_bytes: p.reading.map(|r| r.tree_bytes),
                        device_peak_bytes: p.device_peak_bytes,
                        command_pid: Some(p.pid),
                        updated_at: headroom_model::time::now_rfc3339(),
                    };
                    // Headroom's problem, never the run's: a status that cannot be written
                    // is skipped.
                    let _ = headroom_core::jobs::detached::write_status(path, &status);
                },
            )?
        }
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        summary(&out);
    }
    // Whatever became of the records, the command's own status.
    let _ = super::settle_ledger(&ledger).map_err(|e| eprintln!("headroom: {e}"));
    Ok(exit_code(&out))
}

/// `run --detach`: the same `headroom run` started in a session of its own, with this
/// invocation's arguments but `--detach`; returns once it started.
fn detach(
    a: &RunArgs,
    command: &[String],
    project: Option<&headroom_core::project::Project>,
) -> Result<ExitCode> {
    if !a.sweep.is_empty() {
        bail!("--detach runs one training; a sweep runs attached (leave out --sweep or --detach)");
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let from = args.iter().position(|x| x == "run").map_or(0, |i| i + 1);
    let split = args.iter().position(|x| x == "--").unwrap_or(args.len());
    let rest: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(i, x)| *i >= from && !(*i < split && *x == "--detach"))
        .map(|(_, x)| x.clone())
        .collect();
    let exe = std::env::current_exe().context("cannot find headroom's own binary")?;
    let here = std::env::current_dir().context("cannot read the current folder")?;
    let meta = headroom_core::jobs::detached::start(
        &exe,
        &rest,
        command,
        &here,
        project.map(|p| p.name.as_str()),
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&meta)?);
    } else {
        println!(
            "started detached run {} (process group {}): `{}`\nfollow it: headroom runs follow {}\nend it:    headroom runs stop {}",
            meta.id,
            meta.pid,
            command.join(" "),
            meta.id,
            meta.id
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The child's exit code, or 128 + N for a death by signal N as shells say it; stopped at its
/// --steps/--max-seconds bound → 0; stopped over the memory budget → 3.
fn exit_code(out: &WatchOutcome) -> ExitCode {
    if out.over_budget {
        ExitCode::from(3)
    } else if out.stopped_at_limit && !out.interrupted {
        ExitCode::SUCCESS
    } else if let Some(sig) = out.signal {
        ExitCode::from(u8::try_from(128 + sig).unwrap_or(255))
    } else {
        ExitCode::from(
            out.exit_code
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(1),
        )
    }
}
