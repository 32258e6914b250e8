//! `headroom ledger list|show`: the runs recorded in the ledger.

use std::process::ExitCode;

use anyhow::Result;
use headroom_core::budget::format_bytes;

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
    /// Reports of runs: md (with its chart as SVG beside it), html (one standalone file), csv
    /// (the points) or json.
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
    Compare { a: i64, b: i64 },
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
                    r.workload,
                    r.dtype,
                    r.chosen_batch.map_or_else(|| "-".into(), |b| b.to_string()),
                    r.peak_bytes.map_or_else(|| "-".into(), format_bytes),
                    r.points
                );
            }
        }
        LedgerCommand::Export { runs, format, out } => {
            let format = headroom_core::report::Format::parse(format)?;
            for id in runs {
                for f in headroom_core::report::export(&ledger, *id, format, out)? {
                    println!("{}", f.display());
                }
            }
        }
        LedgerCommand::Compare { a, b } => {
            let (ra, pa) = ledger.get_run(*a)?;
            let (rb, pb) = ledger.get_run(*b)?;
            let ca = headroom_core::report::conditions(&ledger, *a)?;
            let cb = headroom_core::report::conditions(&ledger, *b)?;
            let xa = headroom_core::report::context(&ledger, *a)?;
            let xb = headroom_core::report::context(&ledger, *b)?;
            for line in compare_lines((&ra, ca.as_ref(), &pa), (&rb, cb.as_ref(), &pb), (xa, xb)) {
                println!("{line}");
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
            println!("  workload {} · {} · {}", r.workload, r.dtype, r.mode);
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
            if r.kind == "epochs" {
                let samples: Vec<headroom_core::epochs::EpochSample> =
                    ledger.samples(r.id, "epoch")?;
                for smp in &samples {
                    println!("{}", super::epochs::line(smp));
                }
            }
            if let Some(report) = &r.report {
                if r.kind == "doctor" {
                    match serde_json::from_value::<headroom_core::readiness::Report>(report.clone())
                    {
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

/// `ledger compare`: the figures at the batches both runs measured, then every fact that differs.
type Side<'a> = (
    &'a headroom_core::ledger::RunRecord,
    Option<&'a headroom_core::readiness::Conditions>,
    &'a [headroom_core::protocol::Point],
);

fn compare_lines(
    (ra, ca, pa): Side<'_>,
    (rb, cb, pb): Side<'_>,
    (xa, xb): (
        Option<headroom_core::ledger::RunContext>,
        Option<headroom_core::ledger::RunContext>,
    ),
) -> Vec<String> {
    let mut out = vec![format!(
        "run {} ({} of {} on {}) vs run {} ({} of {} on {})",
        ra.id, ra.kind, ra.workload, ra.device, rb.id, rb.kind, rb.workload, rb.device
    )];
    let mut common = 0;
    for p in pa {
        let Some(q) = pb.iter().find(|q| q.batch == p.batch) else {
            continue;
        };
        if let (Some(x), Some(y)) = (p.samples_per_s, q.samples_per_s) {
            common += 1;
            let mem = match (p.peak_bytes, q.peak_bytes) {
                (Some(m), Some(n)) => format!(", peak {} vs {}", format_bytes(m), format_bytes(n)),
                _ => String::new(),
            };
            out.push(format!(
                "  batch {}: {x:.1} vs {y:.1} samples/s ({:+.1} %){mem}",
                p.batch,
                (y / x - 1.0) * 100.0
            ));
        }
    }
    if common == 0 {
        out.push("  no batch measured in both runs".into());
    }
    // The mount of Headroom's folder counts; the apps' memory moves every minute and does not.
    let mount = |x: Option<&headroom_core::ledger::RunContext>| {
        headroom_core::report::context_facts(x).into_iter().take(1)
    };
    let fa: Vec<_> = headroom_core::report::facts(ra, ca)
        .into_iter()
        .chain(mount(xa.as_ref()))
        .collect();
    let fb: Vec<_> = headroom_core::report::facts(rb, cb)
        .into_iter()
        .chain(mount(xb.as_ref()))
        .collect();
    let skip = [
        "status",
        "started",
        "finished",
        "note",
        "chosen batch",
        "peak memory",
    ];
    let differ: Vec<String> = fa
        .iter()
        .zip(&fb)
        .filter(|((k, x), (_, y))| x != y && !skip.contains(k))
        .map(|((k, x), (_, y))| format!("  {k}: {x} vs {y}"))
        .collect();
    if differ.is_empty() {
        out.push("facts that could explain a difference: none differ among those recorded".into());
    } else {
        out.push("facts that differ and could explain it:".into());
        out.extend(differ);
    }
    for (r, c) in [(ra, ca), (rb, cb)] {
        if c.is_none() {
            out.push(format!(
                "run {} has no conditions recorded (power, battery, Low Power Mode, thermal): \
                 it predates them",
                r.id
            ));
        }
    }
    out
}
