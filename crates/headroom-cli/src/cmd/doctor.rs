//! `headroom doctor`: is this machine ready for PyTorch work, in the Python the researcher trains
//! with, and if not, why. Facts come from `headroom_probe::readiness`; Headroom's own libtorch is
//! asked in a worker process (so a crashing GPU driver cannot take doctor down), each Python
//! interpreter by running it. The report is printed as lights (or `--json`) and recorded in the
//! ledger as a `doctor` run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use headroom_core::jobs::{self, doctor::DoctorOptions};
use headroom_model::budget::format_bytes;
use headroom_probe::readiness::python::ProbeStatus;
use headroom_probe::readiness::{LightState, Report};
use serde::Serialize;

/// Arguments of `headroom doctor`.
#[derive(Debug, clap::Args, Serialize)]
pub struct DoctorArgs {
    /// Print one JSON document with every fact.
    #[arg(long)]
    json: bool,
    /// Also ask this Python interpreter (repeatable); the first one named is the one judged.
    #[arg(long = "python", value_name = "PATH")]
    pythons: Vec<PathBuf>,
    /// Seconds each interpreter (and Headroom's libtorch) may take before it is stopped.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    timeout: f64,
    /// Only the interpreters named with --python, VIRTUAL_ENV and CONDA_PREFIX (no search).
    #[arg(long)]
    only_named: bool,
    /// Do not record this run in the ledger.
    #[arg(long)]
    no_ledger: bool,
}

pub fn run(args: &DoctorArgs) -> Result<ExitCode> {
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        anyhow::bail!(
            "--timeout must be a positive number of seconds, not {}",
            args.timeout
        );
    }
    let started = Instant::now();
    let chatty = !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let opts = DoctorOptions {
        pythons: args.pythons.clone(),
        only_named: args.only_named,
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let exe = jobs::worker_binary()?;
    let report = jobs::doctor::check(&exe, &opts, &mut |n| {
        if chatty {
            eprintln!(
                "asking {n} Python interpreter{} and Headroom's libtorch…",
                if n == 1 { "" } else { "s" }
            );
        }
    });
    let run_id = if args.no_ledger {
        None
    } else {
        let ledger = jobs::open_ledger().context("cannot open the ledger")?;
        Some(jobs::doctor::record(
            &ledger,
            &report,
            &serde_json::to_string(args)?,
        )?)
    };
    if args.json {
        let mut doc = serde_json::to_value(&report)?;
        doc["run_id"] = serde_json::json!(run_id);
        doc["seconds"] = serde_json::json!(started.elapsed().as_secs_f64());
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_report(&report);
        if let Some(id) = run_id {
            println!(
                "\nrecorded as run {id} ({:.1} s); `headroom doctor --json` has every fact",
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(if report.any_red() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn mark(state: LightState) -> &'static str {
    match state {
        LightState::Green => "[ ok ]",
        LightState::Yellow => "[warn]",
        LightState::Red => "[FAIL]",
        LightState::Off => "[ -- ]",
    }
}

/// The human report: lights first, then the facts behind them.
pub fn print_report(r: &Report) {
    for l in &r.lights {
        println!("{} {:<10} {}", mark(l.state), l.backend, l.reason);
        if let Some(fix) = &l.fix {
            println!("{:<18}fix: {fix}", "");
        }
    }
    for n in &r.notes {
        println!("note: {n}");
    }
    let m = &r.machine;
    println!();
    println!(
        "machine   {}{}{} · {} · {}{}",
        m.os_name.as_deref().unwrap_or(&m.os),
        m.os_version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default(),
        m.kernel
            .as_deref()
            .map(|k| format!(" (kernel {k})"))
            .unwrap_or_default(),
        m.cpu.as_deref().unwrap_or("unknown CPU"),
        m.arch,
        match m.translated {
            Some(true) => " · this process runs under Rosetta",
            Some(false) => " · native",
            None => "",
        }
    );
    println!(
        "memory    {}{}",
        m.memory_total_bytes
            .map_or_else(|| "unknown".into(), format_bytes),
        m.cpu_cores
            .map(|c| format!(" · {c} CPU threads"))
            .unwrap_or_default()
    );
    for g in &m.gpus {
        println!(
            "gpu       {}{}{}{} (from {})",
            g.name,
            g.cores.map(|c| format!(" · {c} cores")).unwrap_or_default(),
            g.memory_bytes
                .map(|b| format!(" · {}", format_bytes(b)))
                .unwrap_or_default(),
            g.driver
                .as_deref()
                .map(|d| format!(" · driver {d}"))
                .unwrap_or_default(),
            g.source
        );
    }
    match (&r.libtorch, &r.libtorch_error) {
        (Some(lib), _) => {
            println!(
                "libtorch  {} (Headroom's own) · {} CPU threads · CUDA devices {} · MPS {}",
                lib.version,
                lib.threads,
                lib.cuda_devices,
                if lib.has_mps { "yes" } else { "no" }
            );
            for c in &lib.devices {
                match &c.error {
                    None => println!(
                        "          {:<7} {} · {} · 512×512 matmul {:.2} ms on {}",
                        c.device,
                        c.name,
                        format_bytes(c.memory_total_bytes),
                        c.matmul_ms.unwrap_or(0.0),
                        c.result_device.as_deref().unwrap_or("?")
                    ),
                    Some(e) => println!("          {:<7} FAILED: {e}", c.device),
                }
            }
        }
        (None, e) => println!("libtorch  not available: {}", e.as_deref().unwrap_or("?")),
    }
    println!(
        "pythons   ({} found; * is the one judged above)",
        r.pythons.len()
    );
    for (i, p) in r.pythons.iter().enumerate() {
        let star = if Some(i) == r.primary { "*" } else { " " };
        let head = format!("        {star} {} [{}]", p.path, p.source);
        match (&p.facts, p.status) {
            (Some(f), ProbeStatus::Ok) => {
                let torch = match &f.torch {
                    Some(t) => format!(
                        "torch {} · mps built {} available {} · cuda {} · matmul on {}",
                        t.version,
                        yes(t.mps_built),
                        yes(t.mps_available),
                        yes(t.cuda_available),
                        t.matmul_device
                            .as_deref()
                            .or(t.matmul_error.as_deref())
                            .unwrap_or("?")
                    ),
                    None => format!("no torch ({})", f.torch_error.as_deref().unwrap_or("?")),
                };
                let mlx = f
                    .mlx
                    .as_ref()
                    .map(|m| {
                        format!(
                            " · mlx {} on {}",
                            m.version.as_deref().unwrap_or("?"),
                            m.default_device
                        )
                    })
                    .unwrap_or_default();
                let archs = if p.binary_archs.is_empty() {
                    String::new()
                } else {
                    format!(" (binary: {})", p.binary_archs.join("+"))
                };
                println!(
                    "{head}\n            Python {} {}{archs} · {torch}{mlx}",
                    f.version, f.machine
                );
            }
            _ => println!(
                "{head}\n            {}: {}",
                match p.status {
                    ProbeStatus::NotFound => "not found",
                    ProbeStatus::TimedOut => "timed out",
                    ProbeStatus::Crashed => "crashed",
                    _ => "failed",
                },
                p.error.as_deref().unwrap_or("?")
            ),
        }
    }
    let c = &r.conditions;
    let mut cond = Vec::new();
    if let Some(s) = c.power_source {
        cond.push(format!("power {s:?}").to_lowercase());
    }
    if let Some(b) = &c.battery {
        cond.push(format!(
            "battery {}{}{}",
            b.percent.map(|p| format!("{p}%")).unwrap_or_default(),
            b.state
                .as_deref()
                .map(|s| format!(" {s}"))
                .unwrap_or_default(),
            b.remaining
                .as_deref()
                .map(|s| format!(" ({s} left)"))
                .unwrap_or_default()
        ));
    }
    if let Some(l) = c.low_power_mode {
        cond.push(format!("low power mode {}", if l { "on" } else { "off" }));
    }
    if let Some(g) = &c.cpu_governor {
        cond.push(format!("governor {g}"));
    }
    cond.push(if c.thermal_exposed {
        format!("thermal warnings {}", c.thermal_warnings.len())
    } else {
        "thermal state not exposed".into()
    });
    println!("conditions {}", cond.join(" · "));
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
