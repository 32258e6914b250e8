//! `headroom watch --pid N`: a running training process watched from outside, its memory in the
//! ledger as it goes, and the leak verdict when it ends or is interrupted.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use headroom_core::jobs::watch::{watch_pid, WatchOptions};
use headroom_model::budget::format_bytes;

/// Arguments of `headroom watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    #[arg(long)]
    pid: u32,
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    #[arg(long)]
    json: bool,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

pub fn watch(a: &WatchArgs) -> Result<ExitCode> {
    if a.interval_ms == 0 {
        bail!("--interval-ms must be 1 or more");
    }
    let opts = WatchOptions::for_pid(
        Duration::from_millis(a.interval_ms),
        headroom_store::config::load()?.epochs,
    );
    let ledger = super::open_ledger_for_training()?;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    std::thread::spawn(move || loop {
        if STOP.load(Ordering::SeqCst) {
            flag.store(true, Ordering::SeqCst);
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    });
    let quiet = a.json;
    let out = watch_pid(a.pid, &opts, &ledger, &stop, &mut |r| {
        if !quiet {
            eprintln!(
                "{:>8.1} s  process {:>10}  tree {:>10} RSS{} ({} processes)",
                r.t,
                format_bytes(r.process_bytes),
                format_bytes(r.tree_bytes),
                r.tree_pss_bytes
                    .map(|p| format!(", {} PSS", format_bytes(p)))
                    .unwrap_or_default(),
                r.processes
            );
        }
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        super::run::summary(&out);
    }
    super::settle_ledger(&ledger)?;
    Ok(ExitCode::SUCCESS)
}
