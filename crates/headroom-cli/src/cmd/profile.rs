//! `headroom profile`: where one batch's time goes — data, forward, backward with the optimizer
//! — and each top-level layer's forward time against its share of the FLOPs, in the worker.

use std::process::ExitCode;

use anyhow::Result;
use headroom_core::jobs::{self, sweep::CancelToken};
use headroom_model::requests::ProfileInput;

/// Arguments of `headroom profile`.
#[derive(Debug, clap::Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    what: super::WorkloadArgs,
    #[arg(long, default_value_t = 32)]
    batch: u32,
    /// Timed passes over the layers (after two untimed ones); the median counts.
    #[arg(long, default_value_t = 10)]
    reps: u32,
    /// Intra-op CPU threads [default: libtorch's].
    #[arg(long)]
    threads: Option<u32>,
    #[command(flatten)]
    record: super::record::RecordArgs,
    /// Print one JSON document.
    #[arg(long)]
    json: bool,
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

pub fn run(a: &ProfileArgs) -> Result<ExitCode> {
    let req = ProfileInput {
        what: a.what.input(),
        batch: a.batch,
        reps: a.reps,
        threads: a.threads,
    }
    .request()?;
    let config = headroom_store::config::load()?;
    let ledger = super::open_ledger()?;
    a.record.attach(&ledger, None, a.json)?;
    let exe = jobs::worker_binary()?;
    let cancel = CancelToken::new("interrupted");
    let out =
        jobs::profile::run_profile(&exe, &req, config.decide.slow_layer_share, &ledger, &cancel)?;
    if !a.json {
        for w in &out.warnings {
            eprintln!("warning: {w}");
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if let Some(r) = &out.report {
        let where_ = out.hello.as_ref().map_or("?", |h| h.device.as_str());
        let p = &r.point;
        println!(
            "{} on {where_} at batch {}: step {} ms = data {} + forward {} + backward and optimizer {} ms",
            a.what.workload,
            r.batch,
            ms(p.step_ms_p50),
            ms(p.data_ms),
            ms(p.forward_ms),
            ms(p.backward_ms)
        );
        if r.layers.is_empty() {
            println!("{}", r.layers_note.as_deref().unwrap_or("no layers timed"));
        } else {
            println!(
                "\n{:<24} {:>12} {:>8} {:>9}  output",
                "layer", "forward ms", "time %", "FLOPs %"
            );
            for l in &r.layers {
                println!(
                    "{:<24} {:>12.3} {:>8.1} {:>9}  {:?}",
                    l.name,
                    l.forward_ms,
                    l.time_share * 100.0,
                    l.flops_share
                        .map_or_else(|| "-".into(), |f| format!("{:.1}", f * 100.0)),
                    l.output_shape
                );
            }
        }
        match &out.slow_layer {
            Some(s) => println!("\n{s}"),
            None if !r.layers.is_empty() => println!("\nno single layer stands out"),
            None => {}
        }
    }
    Ok(super::job_exit(
        out.run_id,
        out.status,
        out.error.as_ref(),
        a.json,
    ))
}
