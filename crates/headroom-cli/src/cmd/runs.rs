//! `headroom runs`: the detached runs on this machine (`headroom run --detach`), which outlive
//! the terminal or ssh session that started them — listed, followed live, stopped. `headroom
//! remote runs|attach|stop` are these, run on the remote host over ssh.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use headroom_core::jobs::detached::{self, DetachedRun, DetachedState};

#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    command: Option<RunsCommand>,
    /// The list as JSON (each run with its state, progress and, once ended, its result).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Follow a run's output live until it ends; Ctrl-C stops following and leaves it running.
    Follow {
        id: String,
        /// Start this many bytes before the end instead of at the beginning.
        #[arg(long, value_name = "BYTES")]
        tail: Option<u64>,
    },
    /// End a run and its whole process group (kept as interrupted).
    Stop {
        id: String,
        /// Seconds it has to end after SIGTERM before SIGKILL.
        #[arg(long, default_value_t = 20)]
        grace: u64,
        #[arg(long)]
        json: bool,
    },
    /// One run as JSON.
    Show { id: String },
}

/// One run for people: id, state and [`DetachedRun::summary`], then why it reads so and its
/// last output line.
pub fn line(r: &DetachedRun) -> String {
    let mut s = format!("{}  {:<11} {}", r.meta.id, r.state.as_str(), r.summary());
    if let Some(n) = &r.note {
        s.push_str(&format!("\n    {n}"));
    }
    if let Some(l) = &r.last_line {
        s.push_str(&format!("\n    > {l}"));
    }
    s
}

pub fn run(a: &RunsArgs) -> Result<ExitCode> {
    match &a.command {
        None => {
            let runs = detached::list()?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else if runs.is_empty() {
                println!("no detached runs here: start one with `headroom run --detach -- python train.py`");
            } else {
                for r in &runs {
                    println!("{}  `{}`", line(r), r.meta.command.join(" "));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(RunsCommand::Show { id }) => {
            println!("{}", serde_json::to_string_pretty(&detached::read(id)?)?);
            Ok(ExitCode::SUCCESS)
        }
        Some(RunsCommand::Stop { id, grace, json }) => {
            let r = detached::stop(id, Duration::from_secs(*grace))?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                println!("{}", line(&r));
            }
            Ok(if r.state == DetachedState::Running {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Some(RunsCommand::Follow { id, tail }) => {
            let stop = catch_interrupt();
            let mut out = std::io::stdout();
            let r = detached::follow(id, *tail, &mut out, &|| stop.load(Ordering::SeqCst))?;
            if r.state == DetachedState::Running {
                eprintln!(
                    "headroom: stopped following; run {} goes on (`headroom runs follow {}` again, `headroom runs stop {}` to end it)",
                    r.meta.id, r.meta.id, r.meta.id
                );
            } else {
                eprintln!("headroom: run {} ended {}", r.meta.id, r.state.as_str());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Ctrl-C (and the hang-up of a closed ssh session) stops following, never the run.
pub(crate) fn catch_interrupt() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    extern "C" fn on_signal(_: libc::c_int) {
        if let Some(f) = FLAG.get() {
            f.store(true, Ordering::SeqCst);
        }
    }
    let flag = Arc::clone(FLAG.get_or_init(Arc::default));
    // SAFETY: the handler only loads an initialised OnceLock and stores to an atomic.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
    flag
}
