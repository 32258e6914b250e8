//! `headroom remote add|list|show|rm|check`: host profiles, the managed ssh config, and checks.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Subcommand;
use headroom_core::remote::check::{check, CheckOptions, CheckReport};
use headroom_core::remote::{ssh_dir, sshconfig, HostProfile, Hosts};
use headroom_model::budget::format_bytes;

#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// Add a host profile (and its Host block in the managed ssh config).
    Add {
        name: String,
        #[arg(long)]
        host: String,
        #[arg(long)]
        port: Option<u16>,
        #[arg(long)]
        user: Option<String>,
        /// A private key file (your ssh agent is used too; passwords never are).
        #[arg(long)]
        identity: Option<String>,
        /// A jump host, `[user@]host[:port]`.
        #[arg(long)]
        jump: Option<String>,
        #[arg(long, default_value_t = 5900)]
        vnc_port: u16,
        /// Where `headroom` is on the remote when not on its PATH.
        #[arg(long)]
        headroom_path: Option<String>,
        #[arg(long, default_value = "")]
        notes: String,
        /// Where checkpoints and data live (host:port or a URL): sweeps on this host record the
        /// round trip to it, measured from the host.
        #[arg(long, value_name = "HOST:PORT|URL")]
        artifact_store: Option<String>,
        /// Replace a profile of the same name.
        #[arg(long)]
        replace: bool,
    },
    /// List the profiles.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one profile and its ssh config block.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove a profile (and its Host block).
    Rm { name: String },
    /// Run a sweep on the remote (its `headroom worker` over ssh); points land in this ledger
    /// under the host's name.
    Sweep {
        name: String,
        /// Seconds to wait for the connection.
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        connect_timeout: u64,
        #[command(flatten)]
        sweep: Box<super::sweep::SweepArgs>,
    },
    /// Start a project's training on this host detached from this machine: it goes on when the
    /// laptop sleeps, the Wi-Fi drops or the app quits (under `caffeinate -i` on a Mac), under
    /// `headroom run` there. Returns at once with the run's id. Needs the migration's steps up
    /// to the project to have passed (`headroom remote migrate NAME --project P`).
    Run {
        name: String,
        #[arg(long)]
        project: String,
        /// The batch, for a command with `{batch}`.
        #[arg(long)]
        batch: Option<u32>,
        /// Release memory at each epoch end there (none, gc, empty-cache, both).
        #[arg(long, value_name = "none|gc|empty-cache|both")]
        release: Option<String>,
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        #[arg(long)]
        json: bool,
    },
    /// The detached runs on this host: state, epoch, steps, samples/s, memory, the last output
    /// line. Each is mirrored into this ledger under the host's name (once; a run that ended
    /// while this machine was away is caught up).
    Runs {
        name: String,
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        #[arg(long)]
        json: bool,
    },
    /// Follow a run on this host live; Ctrl-C stops following and leaves it running.
    Attach {
        name: String,
        run: String,
        /// Start this many bytes before the end of its output instead of at its beginning.
        #[arg(long, value_name = "BYTES")]
        tail: Option<u64>,
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
    },
    /// End a run on this host and its whole process group there (kept as interrupted).
    Stop {
        name: String,
        run: String,
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        #[arg(long)]
        json: bool,
    },
    /// Forward a port of this host to this machine through ssh (TensorBoard's 6006, a
    /// notebook's 8888) until Ctrl-C or --for seconds.
    Tunnel {
        name: String,
        port: u16,
        /// The local port [default: the same, else a free one].
        #[arg(long)]
        local: Option<u16>,
        #[arg(long = "for")]
        for_secs: Option<u64>,
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
    },
    /// Open the remote's screen: an SSH tunnel to its VNC port and `vnc://localhost:PORT`
    /// handed to the OS; the tunnel closes when the viewer is done, after --for seconds, or on
    /// Ctrl-C.
    Vnc {
        name: String,
        /// Local port of the tunnel [default: a free one].
        #[arg(long)]
        port: Option<u16>,
        /// Close the tunnel after this many seconds.
        #[arg(long = "for")]
        for_secs: Option<u64>,
        /// Print the URL without opening a viewer.
        #[arg(long)]
        no_open: bool,
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
    },
    /// The round trip to an artifact store (host:port or a URL): TCP connects timed from here, or
    /// from a remote host with --from.
    Rtt {
        target: String,
        /// Measure from this remote host (its headroom, over ssh) instead of here.
        #[arg(long, value_name = "NAME")]
        from: Option<String>,
        /// How this machine is named in the result [default: its hostname].
        #[arg(long, hide = true)]
        from_name: Option<String>,
        /// Round trips to time, 1 to 100.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
        count: u32,
        #[arg(long)]
        json: bool,
    },
    /// Move a project to this host step by step: host, key (installed with your password, read
    /// once and never stored), check (with the free disk there), Headroom there, the project
    /// copied and verified with its environment, then your training there, side by side, and the
    /// screen. Resumes at the first step that has not passed; each step runs only after the ones
    /// before it passed.
    Migrate {
        name: String,
        #[arg(long)]
        project: String,
        /// The project's folder on the remote [default: headroom-projects/PROJECT under the
        /// login folder].
        #[arg(long)]
        remote_dir: Option<String>,
        /// A path the project step leaves out (git ignores it, or it is an environment folder)
        /// to copy all the same, as the step names it (`data`); repeat for more, `""` for none.
        /// Kept for the next runs.
        #[arg(long = "also-copy", value_name = "PATH")]
        also_copy: Vec<String>,
        /// Run this one step again (host, key, check, headroom, project, training, compare,
        /// screen).
        #[arg(long)]
        step: Option<String>,
        /// Read the remote login password from standard input (one line), for the key step.
        #[arg(long)]
        password_stdin: bool,
        /// Seconds each ssh connection may take.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        #[arg(long)]
        json: bool,
    },
    /// Reachable? Authenticated? Host key? RTT, OS, architecture, memory, remote headroom.
    Check {
        name: String,
        /// Seconds each ssh call may take.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        /// Skip the remote doctor.
        #[arg(long)]
        no_doctor: bool,
        #[arg(long)]
        json: bool,
    },
}

/// Changes the host profiles with `f` and writes them and the managed ssh config, under
/// Headroom's edit lock; both or neither (see [`Hosts::edit`]). Says when the Include line was
/// added to the user's ssh config.
fn edit_hosts<T>(f: impl FnOnce(&mut Hosts) -> Result<T, headroom_store::CoreError>) -> Result<T> {
    let dir = ssh_dir()?;
    let (out, r) = Hosts::edit(&dir, f).context("cannot write the host profiles")?;
    if r.include_added {
        eprintln!(
            "headroom: added `{}` to the top of {}{}",
            sshconfig::include_line(&dir),
            dir.join("config").display(),
            r.backup
                .map(|b| format!(" (the old file is kept as {})", b.display()))
                .unwrap_or_default()
        );
    }
    Ok(out)
}

/// Makes the managed ssh config match the profiles (ssh must know a name before it is used).
pub(crate) fn sync(_: &Hosts) -> Result<()> {
    edit_hosts(|_| Ok(()))
}

pub fn run(c: &RemoteCommand) -> Result<ExitCode> {
    match c {
        RemoteCommand::Add {
            name,
            host,
            port,
            user,
            identity,
            jump,
            vnc_port,
            headroom_path,
            notes,
            artifact_store,
            replace,
        } => {
            edit_hosts(|hosts| {
                hosts.add(
                    HostProfile {
                        name: name.clone(),
                        host: host.clone(),
                        port: *port,
                        user: user.clone(),
                        identity: identity.clone(),
                        jump: jump.clone(),
                        vnc_port: *vnc_port,
                        headroom_path: headroom_path.clone(),
                        notes: notes.clone(),
                        artifact_store: artifact_store.clone(),
                    },
                    *replace,
                )
            })?;
            println!(
                "added {name}: `ssh {name}` works now; `headroom remote check {name}` checks it"
            );
        }
        RemoteCommand::List { json } => {
            let hosts = Hosts::load()?;
            let all: Vec<&HostProfile> = hosts.list().collect();
            if *json {
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else if all.is_empty() {
                println!("no remote hosts yet: `headroom remote add NAME --host H [--user U]`");
            } else {
                for p in all {
                    println!(
                        "{:<16} {}:{}{}",
                        p.name,
                        p.target(),
                        p.port.unwrap_or(22),
                        if p.notes.is_empty() {
                            String::new()
                        } else {
                            format!("  # {}", p.notes)
                        }
                    );
                }
            }
        }
        RemoteCommand::Show { name, json } => {
            let hosts = Hosts::load()?;
            let p = hosts.get(name)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(p)?);
            } else {
                print!(
                    "{}",
                    sshconfig::render([p])
                        .lines()
                        .skip(2)
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                println!(
                    "\n# VNC port {}{}",
                    p.vnc_port,
                    p.headroom_path
                        .as_ref()
                        .map(|h| format!(", headroom at {h}"))
                        .unwrap_or_default()
                );
            }
        }
        RemoteCommand::Rtt {
            target,
            from,
            from_name,
            count,
            json,
        } => {
            headroom_core::remote::rtt::parse_target(target)?;
            let r = match from {
                Some(name) => {
                    let hosts = Hosts::load()?;
                    let p = hosts.get(name)?;
                    sync(&hosts)?;
                    super::record::measure_from(p, target)
                }
                None => headroom_core::remote::rtt::measure(
                    target,
                    &from_name
                        .clone()
                        .unwrap_or_else(headroom_core::jobs::hostname),
                    *count,
                    Duration::from_secs(3),
                ),
            };
            if *json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                println!("{}", r.describe());
            }
            if r.median_ms.is_none() {
                return Ok(ExitCode::from(1));
            }
        }
        RemoteCommand::Rm { name } => {
            edit_hosts(|hosts| {
                hosts.get(name)?;
                hosts.remove(name);
                Ok(())
            })?;
            println!("removed {name}");
        }
        RemoteCommand::Sweep {
            name,
            connect_timeout,
            sweep,
        } => {
            let hosts = Hosts::load()?;
            let p = hosts.get(name)?.clone();
            sync(&hosts)?;
            return super::sweep::run_on(
                sweep,
                Some(headroom_core::jobs::sweep::Launcher::Remote {
                    profile: p,
                    timeout: Duration::from_secs((*connect_timeout).max(1)),
                }),
            );
        }
        RemoteCommand::Run {
            name,
            project,
            batch,
            release,
            timeout,
            json,
        } => {
            return super::remote_runs::start(
                name,
                project,
                *batch,
                release.as_deref(),
                Duration::from_secs(*timeout),
                *json,
            )
        }
        RemoteCommand::Runs {
            name,
            timeout,
            json,
        } => return super::remote_runs::list(name, Duration::from_secs(*timeout), *json),
        RemoteCommand::Attach {
            name,
            run,
            tail,
            timeout,
        } => return super::remote_runs::attach(name, run, *tail, Duration::from_secs(*timeout)),
        RemoteCommand::Stop {
            name,
            run,
            timeout,
            json,
        } => return super::remote_runs::stop(name, run, Duration::from_secs(*timeout), *json),
        RemoteCommand::Tunnel {
            name,
            port,
            local,
            for_secs,
            timeout,
        } => {
            return super::remote_runs::tunnel(
                name,
                *port,
                *local,
                *for_secs,
                Duration::from_secs(*timeout),
            )
        }
        RemoteCommand::Vnc {
            name,
            port,
            for_secs,
            no_open,
            timeout,
        } => {
            let hosts = Hosts::load()?;
            let p = hosts.get(name)?;
            sync(&hosts)?;
            return vnc(
                p,
                *port,
                *for_secs,
                *no_open,
                Duration::from_secs((*timeout).max(1)),
            );
        }
        RemoteCommand::Migrate {
            name,
            project,
            remote_dir,
            also_copy,
            step,
            password_stdin,
            timeout,
            json,
        } => {
            return migrate(
                name,
                project,
                Placing {
                    remote_dir: remote_dir.as_deref(),
                    also_copy: also_copy.as_slice(),
                },
                step.as_deref(),
                *password_stdin,
                *timeout,
                *json,
            )
        }
        RemoteCommand::Check {
            name,
            timeout,
            no_doctor,
            json,
        } => {
            if *timeout == 0 {
                anyhow::bail!("--timeout must be 1 second or more");
            }
            let hosts = Hosts::load()?;
            let p = hosts.get(name)?;
            // The managed config must know the name before ssh can use it.
            sync(&hosts)?;
            let r = check(
                p,
                &CheckOptions {
                    timeout: Duration::from_secs(*timeout),
                    doctor: !no_doctor,
                    ..CheckOptions::default()
                },
            )?;
            let ledger = super::open_ledger()?;
            headroom_core::remote::check::record(&ledger, &r)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print_check(&r);
            }
            return Ok(if r.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_check(r: &CheckReport) {
    if let Some(f) = &r.failure {
        println!("{} ({}): FAILED — {}", r.name, r.target, f.message);
        println!("  fix: {}", f.fix);
        return;
    }
    println!(
        "{} ({}): reachable, key accepted, host key known",
        r.name, r.target
    );
    if let Some(rtt) = r.rtt_ms {
        println!(
            "  RTT {rtt:.1} ms (median of {}), first answer after {:.2} s",
            r.rtt_samples_ms.len(),
            r.connect_s.unwrap_or(0.0)
        );
    }
    println!(
        "  {} {} · {} memory",
        r.os.as_deref().unwrap_or("unknown OS"),
        r.arch.as_deref().unwrap_or("unknown arch"),
        r.memory_bytes
            .map_or_else(|| "unknown".into(), format_bytes)
    );
    match &r.headroom {
        Some(v) => println!("  {v} installed there"),
        None => {
            println!("  headroom is not installed there (or not on its PATH: add --headroom-path)")
        }
    }
    if !r.doctor_lights.is_empty() {
        println!("  remote doctor: {}", r.doctor_lights.join(", "));
    }
    if let Some(e) = &r.doctor_error {
        println!("  remote doctor failed: {e}");
    }
}

fn vnc(
    p: &HostProfile,
    port: Option<u16>,
    for_secs: Option<u64>,
    no_open: bool,
    timeout: Duration,
) -> Result<ExitCode> {
    use headroom_core::remote::vnc::{open_tunnel, opener};
    let mut tunnel = match open_tunnel(p, port, timeout)? {
        Ok(t) => t,
        Err(f) => {
            eprintln!(
                "headroom: error: cannot open the tunnel to {}: {}\n  fix: {}",
                p.name, f.message, f.fix
            );
            return Ok(ExitCode::from(1));
        }
    };
    let url = tunnel.url();
    println!(
        "{url}  (tunnel to {}:{} through ssh {})",
        p.host, p.vnc_port, p.name
    );
    let until = for_secs.map(|s| std::time::Instant::now() + Duration::from_secs(s));
    if !no_open {
        let (mut cmd, waits) = opener(&url);
        let status = cmd.status().with_context(|| format!("cannot open {url}"))?;
        if waits {
            println!("the viewer is done ({status}); tunnel closed");
            return Ok(ExitCode::SUCCESS);
        }
    }
    eprintln!(
        "headroom: the tunnel stays open until Ctrl-C{}",
        for_secs.map(|s| format!(" or {s} s")).unwrap_or_default()
    );
    while tunnel.alive() {
        if until.is_some_and(|u| std::time::Instant::now() >= u) {
            println!("tunnel closed after {} s", for_secs.unwrap_or(0));
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("headroom: error: the ssh carrying the tunnel ended");
    Ok(ExitCode::from(1))
}

/// Where `remote migrate` puts the project, and what it copies beyond the default.
struct Placing<'a> {
    remote_dir: Option<&'a str>,
    /// Empty: as saved.
    also_copy: &'a [String],
}

/// `headroom remote migrate`: runs the given step, or every step from the first that has not
/// passed up to the first that fails, saving the state after each.
fn migrate(
    name: &str,
    project: &str,
    placing: Placing<'_>,
    step: Option<&str>,
    password_stdin: bool,
    timeout: u64,
    json: bool,
) -> Result<ExitCode> {
    use headroom_core::jobs::migrate::{run_step, Context, Migration, Step};
    if timeout == 0 {
        anyhow::bail!("--timeout must be 1 second or more");
    }
    let hosts = Hosts::load()?;
    hosts.get(name)?;
    sync(&hosts)?;
    let proj = headroom_core::project::get(project)?;
    let password = if password_stdin {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("cannot read the password from standard input")?;
        Some(line.trim_end_matches(['\r', '\n']).to_owned())
    } else {
        None
    };
    let mut m = Migration::load_or_new(name, project, placing.remote_dir)?;
    if !placing.also_copy.is_empty() {
        // Kept even when the gate below refuses the step.
        m.set_also_copy(placing.also_copy);
        m.save()?;
    }
    let only = step.map(Step::parse).transpose()?;
    if let Some(s) = only {
        m.gate(s)?;
    }
    let remote_dir = m.remote_dir.clone();
    let also_copy = m.also_copy.clone();
    let mut ran = Vec::new();
    // Progress (rsync's running total, pip's lines) goes to stderr in both forms: stdout
    // stays the result.
    let mut say = |line: &str| eprintln!("  {line}");
    let mut next = only.or_else(|| m.next_step());
    while let Some(s) = next {
        // A step may change the profile (Headroom there names its path): read it afresh.
        let p = Hosts::load()?.get(name)?.clone();
        let mut ctx = Context {
            profile: &p,
            project: &proj,
            remote_dir: &remote_dir,
            also_copy: &also_copy,
            password: password.as_deref(),
            timeout: Duration::from_secs(timeout),
            on: &mut say,
        };
        let r = run_step(&mut m, s, &mut ctx);
        m.save()?;
        if !json {
            let n = Step::ALL.iter().position(|x| *x == s).map_or(0, |i| i + 1);
            println!(
                "[{}] {n} {} ({}): {}",
                if r.passed { " ok " } else { "FAIL" },
                s.as_str(),
                s.title(),
                r.detail
            );
            if let Some(f) = &r.fix {
                println!("       fix: {f}");
            }
        }
        let passed = r.passed;
        ran.push(r);
        next = if only.is_some() || !passed {
            None
        } else {
            m.next_step()
        };
    }
    let ok = ran.iter().all(|r| r.passed);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "migration": m, "ran": ran, "ok": ok })
            )?
        );
    } else if let Some(s) = m.next_step() {
        println!(
            "next: step {} ({}) — `headroom remote migrate {name} --project {project}`",
            s.as_str(),
            s.title()
        );
    } else {
        println!("every step passed");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}
