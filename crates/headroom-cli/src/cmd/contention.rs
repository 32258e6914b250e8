//! `headroom contention`: who holds the memory now (conferencing, IDEs, browsers, training, the
//! rest), swap and the OS's pressure, and whether contention is raised; `--watch` samples again
//! every interval, judging swap growth between samples.

use std::process::ExitCode;
use std::time::Duration;

use std::io::Write;

use anyhow::Context;
use clap::Args;
use headroom_model::budget::format_bytes;
use headroom_probe::contention::{ContentionReport, Group, Sampler};

#[derive(Debug, Args)]
pub struct ContentionArgs {
    /// Print the sample as JSON (one document per line with --watch).
    #[arg(long)]
    pub json: bool,
    /// Keep sampling until Ctrl-C (or --count samples).
    #[arg(long)]
    pub watch: bool,
    /// Seconds between samples (default: contention.interval_s in the config, 5).
    #[arg(long)]
    pub interval: Option<u64>,
    /// Stop after this many samples (with --watch).
    #[arg(long)]
    pub count: Option<u64>,
}

pub fn run(a: &ContentionArgs) -> anyhow::Result<ExitCode> {
    let config = headroom_store::config::load()?;
    let cfg = &config.contention;
    if a.interval == Some(0) {
        anyhow::bail!("--interval must be 1 second or more");
    }
    let interval = Duration::from_secs(a.interval.unwrap_or(cfg.interval_s));
    let ledger = super::open_ledger()?;
    let need = headroom_core::evidence::measured_need(&ledger)?;
    let mut sampler = Sampler::new();
    let mut n = 0u64;
    loop {
        let training = headroom_core::evidence::training_pids(&ledger)?;
        let report = sampler.sample(cfg, &training, need.clone());
        n += 1;
        if a.json {
            let text = if a.watch {
                serde_json::to_string(&report)
            } else {
                serde_json::to_string_pretty(&report)
            };
            let mut out = std::io::stdout().lock();
            // A reader that went away (`| head -1`) ends the watch quietly.
            if let Err(e) = writeln!(out, "{}", text.context("cannot encode the sample")?)
                .and_then(|()| out.flush())
            {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    return Ok(ExitCode::SUCCESS);
                }
                return Err(e).context("cannot write the sample");
            }
        } else {
            print(&report, n > 1);
        }
        if !a.watch || a.count.is_some_and(|c| n >= c) {
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(interval);
    }
}

fn print(r: &ContentionReport, again: bool) {
    if again {
        println!();
    }
    let s = &r.system;
    println!(
        "memory: {} of {} available · swap {} · pressure {}",
        format_bytes(s.available_bytes),
        format_bytes(s.total_bytes),
        s.swap_used_bytes
            .map_or_else(|| "unknown".into(), format_bytes),
        s.pressure.map_or("unknown", |p| match p {
            headroom_probe::contention::Pressure::Normal => "normal",
            headroom_probe::contention::Pressure::Warn => "WARNING",
            headroom_probe::contention::Pressure::Critical => "CRITICAL",
        }),
    );
    println!("  ({})", s.pressure_detail);
    for g in &r.groups {
        let apps: Vec<String> = g
            .apps
            .iter()
            .take(4)
            .map(|a| format!("{} {}", a.name, format_bytes(a.bytes)))
            .collect();
        println!(
            "  {:<16} {:>10}  {:>4} processes  {}",
            g.group.label(),
            format_bytes(g.bytes),
            g.processes,
            apps.join(", ")
        );
    }
    match &r.need {
        Some(n) => println!("training needs {} ({})", format_bytes(n.bytes), n.source),
        None => {
            println!("training need: not measured yet (run `headroom sweep` or `headroom run`)")
        }
    }
    if r.raised {
        println!("CONTENTION RAISED:");
        for reason in &r.reasons {
            println!("  - {reason}");
        }
        if r.bytes(Group::Conferencing) + r.bytes(Group::Ide) > 0 {
            println!(
                "  close the call or the IDE, lower the batch, or move the run to a remote host"
            );
        }
    } else {
        println!("no contention");
    }
    println!(
        "(sampled {} processes in {:.1} ms)",
        r.processes, r.sample_ms
    );
}
