//! `headroom ledger list|show`: the runs recorded in the ledger.

use std::process::ExitCode;

use anyhow::Result;
use headroom_model::budget::format_bytes;
use headroom_store::ledger::RunKind;

/// Subcommands of `headroom ledger`.
#[derive(Debug, clap::Subcommand)]
pub enum LedgerCommand {
    /// The newest runs, newest first.
    List {
        /// How many runs to show.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// One run with all its points.
    Show {
        /// The run id (`headroom ledger list` shows them).
        run: i64,
        #[arg(long)]
        json: bool,
    },
    /// Reports of runs: md (its charts as SVG and PNG beside it), html (one standalone file),
    /// csv (the points), json, or the charts alone as svg or png. With several runs that have
    /// points, also `compare-A-B….svg/.png` with their curves side by side.
    Export {
        #[arg(required = true)]
        runs: Vec<i64>,
        #[arg(long, default_value = "html")]
        format: String,
        /// The folder the reports go to.
        #[arg(long, default_value = ".")]
        out: std::path::PathBuf,
    },
    /// What differs between two runs: the figures at the batches both measured, and the facts
    /// that could explain a difference.
    Compare {
        a: i64,
        b: i64,
        /// Also draw both runs' curves side by side into this file (`.svg` or `.png`).
        #[arg(long)]
        chart: Option<std::path::PathBuf>,
        /// How close two runs' metrics (`headroom-metric` lines, `run --metric`) must be to
        /// agree: an absolute difference (0.01) or a share of the first run's value (1%).
        #[arg(long, default_value = "1%")]
        tolerance: String,
    },
}

pub fn run(cmd: &LedgerCommand) -> Result<ExitCode> {
    let ledger = super::open_ledger()?;
    match cmd {
        LedgerCommand::List { limit, json } => {
            let runs = ledger.list_runs(*limit)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
                return Ok(ExitCode::SUCCESS);
            }
            if runs.is_empty() {
                println!(
                    "no runs yet in {}; try `headroom sweep`",
                    ledger.path().display()
                );
            }
            for r in runs {
                println!(
                    "{:>5}  {}  {:<11} {:<6} {:<8} {:<10} {:<5} batch {:>6}  peak {:>10}  {} points",
                    r.id,
                    r.started_at,
                    r.status.as_str(),
                    r.kind,
                    r.device,
                    one_line(&r.workload, 40),
                    r.dtype_name(),
                    r.chosen_batch.map_or_else(|| "-".into(), |b| b.to_string()),
                    r.peak_bytes.map_or_else(|| "-".into(), format_bytes),
                    r.points
                );
            }
        }
        LedgerCommand::Export { runs, format, out } => {
            let format = headroom_report::report::Format::parse(format)?;
            for id in runs {
                for f in headroom_report::report::export(&ledger, *id, format, out)? {
                    println!("{}", f.display());
                }
            }
            // Several runs with curves: also one picture with them side by side.
            if runs.len() > 1 {
                if let Some(files) = headroom_report::report::export_overlay(&ledger, runs, out)? {
                    for f in files {
                        println!("{}", f.display());
                    }
                }
            }
        }
        LedgerCommand::Compare {
            a,
            b,
            chart,
            tolerance,
        } => {
            let tol = headroom_report::report::Tolerance::parse(tolerance)?;
            for line in headroom_report::report::compare_within(&ledger, *a, *b, tol)? {
                println!("{line}");
            }
            if let Some(path) = chart {
                headroom_report::report::write_overlay(&ledger, &[*a, *b], path)?;
                println!("chart: {}", path.display());
            }
        }
        LedgerCommand::Show { run, json } => {
            let (r, points) = ledger.get_run(*run)?;
            if *json {
                let samples: Vec<serde_json::Value> = ledger.samples(r.id, "epoch")?;
                let doc = serde_json::json!({ "run": r, "points": points, "samples": samples });
                println!("{}", serde_json::to_string_pretty(&doc)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "run {} · {} · {} · started {}",
                r.id,
                r.kind,
                r.status.as_str(),
                r.started_at
            );
            println!(
                "  host {} · device {} ({}) · libtorch {}",
                r.host, r.device, r.device_name, r.libtorch
            );
            println!(
                "  workload {} · {}",
                r.workload,
                r.dtype_mode().replace(" / ", " · ")
            );
            println!(
                "  git {} {}",
                r.git_commit
                    .as_deref()
                    .unwrap_or("(not in a git repository)"),
                match r.git_dirty {
                    Some(true) => "(dirty)",
                    Some(false) => "(clean)",
                    None => "",
                }
            );
            if let Some(note) = &r.note {
                println!("  note: {note}");
            }
            for p in &points {
                println!(
                    "  batch {:>6} {:>11} {:>12} samples/s  p50 {:>9} ms  peak {:>10}{}",
                    p.batch,
                    p.status.as_str(),
                    p.samples_per_s
                        .map_or_else(|| "-".into(), |s| format!("{s:.1}")),
                    p.step_ms_p50
                        .map_or_else(|| "-".into(), |s| format!("{s:.2}")),
                    p.peak_bytes.map_or_else(|| "-".into(), format_bytes),
                    p.message
                        .as_deref()
                        .map(|m| format!("  {m}"))
                        .unwrap_or_default()
                );
            }
            if matches!(r.kind, RunKind::Run | RunKind::Watch) {
                if let Some(line) = r.report.as_ref().and_then(run_figures) {
                    println!("  {line}");
                }
            }
            if matches!(r.kind, RunKind::Epochs | RunKind::Run) {
                let samples: Vec<headroom_model::epochs::EpochSample> =
                    ledger.samples(r.id, "epoch")?;
                for smp in &samples {
                    println!("{}", super::epochs::line(smp));
                }
            }
            if let Some(report) = &r.report {
                if r.kind == RunKind::Doctor {
                    match serde_json::from_value::<headroom_probe::readiness::Report>(
                        report.clone(),
                    ) {
                        Ok(rep) => super::doctor::print_report(&rep),
                        Err(e) => println!("  (its report is unreadable: {e})"),
                    }
                }
            }
            if let Some(s) = &r.summary {
                match s.recommended_batch {
                    Some(b) => println!("  recommended batch {b}: {}", s.reason),
                    None => println!("  no recommendation: {}", s.reason),
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A watched run's step figures and the loop's shape, from its report: "steps 600 ·
/// 36.7 k samples/s · p50 0.86 ms · data 12 % · batch 32 · 600 training iterations".
fn run_figures(report: &serde_json::Value) -> Option<String> {
    let w: headroom_core::jobs::watch::WatchOutcome =
        serde_json::from_value(report.clone()).ok()?;
    let mut parts = vec![format!("steps {}", w.steps)];
    if let Some(s) = w.samples_per_s {
        parts.push(format!("{} samples/s", headroom_model::stats::sig3(s)));
    }
    if let Some(p) = w.step_ms_p50 {
        parts.push(format!("p50 {} ms", headroom_model::stats::sig3(p)));
    }
    if let Some(d) = w.data_share {
        parts.push(format!("data {:.0} %", d * 100.0));
    }
    if let Some(b) = w.batch {
        parts.push(format!("batch {b}"));
    }
    if let Some(o) = &w.observed {
        parts.push(o.loop_shape());
    }
    Some(parts.join(" · "))
}

/// `s` on one line (a `run` command may hold newlines), cut to `max` characters.
fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max - 1).collect::<String>())
    } else {
        flat
    }
}
