//! `headroom epochs`: trains one batch size for several epochs in the worker and says whether
//! memory grows across them (a leak), whether only the allocator cache grows, or neither.

use std::process::ExitCode;

use anyhow::Result;
use headroom_core::jobs::{self, sweep::CancelToken};
use headroom_model::budget::format_bytes;
use headroom_model::epochs::{EpochSample, EpochVerdictKind};
use headroom_model::requests::EpochsInput;

/// Arguments of `headroom epochs`.
#[derive(Debug, clap::Args)]
pub struct EpochsArgs {
    #[command(flatten)]
    what: super::WorkloadArgs,
    #[arg(long, default_value_t = 32)]
    batch: u32,
    #[arg(long, default_value_t = 10)]
    epochs: u32,
    #[arg(long, default_value_t = 20)]
    steps_per_epoch: u32,
    /// What to release at each epoch end: none, gc, empty-cache or both.
    #[arg(long, default_value = "none")]
    release: String,
    /// Retain this many MiB of device tensors every epoch: a real leak, to see the detector work.
    #[arg(long, value_name = "MIB", num_args = 0..=1, default_missing_value = "64")]
    leak_demo: Option<u32>,
    /// Growth that makes a leak suspect, in percent over --leak-over epochs [default: the
    /// configuration's epochs.leak_growth, +26 %].
    #[arg(long)]
    leak_threshold: Option<f64>,
    /// [default: the configuration's epochs.over_epochs, 10]
    #[arg(long)]
    leak_over: Option<u32>,
    /// Intra-op CPU threads [default: libtorch's].
    #[arg(long)]
    threads: Option<u32>,
    #[command(flatten)]
    record: super::record::RecordArgs,
    /// Print one JSON document.
    #[arg(long)]
    json: bool,
}

fn opt_bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), format_bytes)
}

pub(crate) fn line(s: &EpochSample) -> String {
    format!(
        "  epoch {:>3}  {:>10} live  {:>10} cache  {:>10} footprint  {:>8.2} s  {:>10} samples/s",
        s.epoch,
        opt_bytes(s.live_bytes),
        opt_bytes(s.cache_bytes),
        opt_bytes(s.footprint_bytes),
        s.seconds,
        s.samples_per_s
            .map_or_else(|| "-".into(), |v| format!("{v:.1}"))
    )
}

pub fn run(a: &EpochsArgs) -> Result<ExitCode> {
    let input = EpochsInput {
        what: a.what.input(),
        batch: a.batch,
        epochs: a.epochs,
        steps_per_epoch: a.steps_per_epoch,
        release: a.release.clone(),
        leak_mib: a.leak_demo.unwrap_or(0),
        threads: a.threads,
        leak_threshold_pct: a.leak_threshold,
        leak_over: a.leak_over,
    };
    let (req, thresholds) = input.request(&headroom_store::config::load()?.epochs)?;
    let ledger = super::open_ledger_keeping()?;
    a.record.attach(&ledger, None, a.json)?;
    let exe = jobs::worker_binary()?;
    let cancel = CancelToken::new("interrupted");
    let quiet = a.json;
    let out =
        jobs::epoch_job::run_epochs(&exe, &req, &thresholds, &ledger, &cancel, &mut |s, c| {
            if !quiet {
                let energy = c
                    .and_then(|c| jobs::epoch_job::epoch_joules_per_sample(s, c))
                    .map_or_else(String::new, |j| {
                        format!("  {} J/sample", headroom_model::stats::sig3(j))
                    });
                println!("{}{energy}", line(s));
            }
        })?;
    super::settle_ledger(&ledger)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for w in &out.warnings {
            eprintln!("warning: {w}");
        }
        if let Some(v) = &out.verdict {
            let head = match v.kind {
                EpochVerdictKind::LeakSuspected => "LEAK SUSPECTED",
                EpochVerdictKind::CacheGrowth => "cache growth",
                EpochVerdictKind::Stable => "stable",
                EpochVerdictKind::TooShort => "too short to judge",
            };
            println!("\n{head}: {}", v.reason);
        }
    }
    Ok(super::job_exit(
        out.run_id,
        out.status,
        out.error.as_ref(),
        a.json,
    ))
}
