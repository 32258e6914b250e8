//! `headroom`: every Headroom capability as a command (sweep, ledger, doctor), plus the hidden
//! `worker`, which hands over to `headroom-worker` (the binary beside this one that owns libtorch
//! for one run and speaks the JSON-lines protocol on stdout). Commands parse and check their
//! input here, then call `headroom-core` and the worker. This binary does not link libtorch, so
//! it starts in milliseconds.

mod cmd;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Is this machine ready for PyTorch work, and which batch runs best — measured here.
#[derive(Debug, Parser)]
#[command(name = "headroom", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure training (or inference) throughput and memory across batch sizes.
    Sweep(cmd::sweep::SweepArgs),
    /// Train one batch for several epochs and judge memory growth (leak, cache, stable).
    Epochs(cmd::epochs::EpochsArgs),
    /// Where one batch's time goes: data, forward, backward, and each layer against its FLOPs.
    Profile(cmd::profile::ProfileArgs),
    /// Run your own training command and watch its memory and epochs: `headroom run -- python train.py`.
    Run(cmd::run::RunArgs),
    /// Your model on its device (or in bf16/f16) against a CPU copy in f32, layer by layer, at
    /// one training iteration of your own script: `headroom numerics -- python train.py`.
    Numerics(cmd::run::NumericsArgs),
    /// Watch the memory of a process already running, until it exits or Ctrl-C.
    Watch(cmd::watch::WatchArgs),
    /// Your detached runs (`headroom run --detach`), which outlive the terminal that started
    /// them: list them, follow one live, stop one.
    Runs(cmd::runs::RunsArgs),
    /// Show the runs recorded in the ledger.
    Ledger {
        #[command(subcommand)]
        command: cmd::ledger::LedgerCommand,
    },
    /// Readiness at a glance: a light per backend (CPU, MPS, CUDA, MLX) for every Python found.
    Doctor(cmd::doctor::DoctorArgs),
    /// Who holds the memory now (conferencing, IDEs, browsers, training), swap and pressure.
    Contention(cmd::contention::ContentionArgs),
    /// Where to run this work now: CPU, MPS, MLX or a remote host, with the measured reasons.
    Decide(cmd::decide::DecideArgs),
    /// Your training projects: folder, Python and command with {batch}/{device}.
    Project {
        #[command(subcommand)]
        command: cmd::project::ProjectCommand,
    },
    /// Remote hosts: profiles, the managed ssh config, checks.
    Remote {
        #[command(subcommand)]
        command: cmd::remote::RemoteCommand,
    },
    /// The configuration: thresholds and process lists, with their defaults.
    Config {
        #[command(subcommand)]
        command: cmd::config::ConfigCommand,
    },
    /// Run one job from a JSON request on stdin, writing protocol events to stdout (internal).
    #[command(hide = true)]
    Worker {
        /// Instead: report Headroom's libtorch (version, devices, a matmul on each) as one JSON line.
        #[arg(long)]
        doctor: bool,
    },
}

/// `headroom --version`: Headroom's version, the commit it was built from, and the libtorch its
/// worker runs with (asked of `headroom-worker`, which loads it).
fn version() -> String {
    format!(
        "headroom {} (commit {}, libtorch {})",
        env!("CARGO_PKG_VERSION"),
        env!("HEADROOM_COMMIT"),
        cmd::worker::libtorch_version()
    )
}

/// A closed stdout (`headroom ledger list | head -1`) ends the command quietly with 141
/// (128 + SIGPIPE), as Unix tools end — never a panic with a backtrace. Headroom keeps SIGPIPE
/// ignored (a command it runs must never die with it), so the write fails and `println!`
/// panics; this hook turns that one panic into the exit and leaves every other as it was.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.starts_with("failed printing to stdout") && text.contains("os error 32") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    // Only `--version` asks the worker for its libtorch; every other command starts without it.
    if let [flag] = &std::env::args().skip(1).collect::<Vec<_>>()[..] {
        if flag == "--version" || flag == "-V" {
            println!("{}", version());
            return ExitCode::SUCCESS;
        }
    }
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Sweep(args) => cmd::sweep::run(&args),
        Command::Ledger { command } => cmd::ledger::run(&command),
        Command::Doctor(args) => cmd::doctor::run(&args),
        Command::Contention(args) => cmd::contention::run(&args),
        Command::Decide(args) => cmd::decide::run(&args),
        Command::Remote { command } => cmd::remote::run(&command),
        Command::Project { command } => cmd::project::run(&command),
        Command::Config { command } => cmd::config::run(&command),
        Command::Epochs(args) => cmd::epochs::run(&args),
        Command::Profile(args) => cmd::profile::run(&args),
        Command::Run(args) => cmd::run::run(&args),
        Command::Numerics(args) => cmd::run::numerics(args),
        Command::Watch(args) => cmd::watch::watch(&args),
        Command::Runs(args) => cmd::runs::run(&args),
        Command::Worker { doctor } => return cmd::worker::exec(doctor),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("headroom: error: {}", chain_once(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes joined with ": ", each said once: Headroom's errors already carry
/// their OS error in their own words (`cannot write /x: Read-only file system (os error 30)`), so
/// a cause whose text is in what came before is left out.
fn chain_once(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if text.contains(&c) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&c);
    }
    text
}
