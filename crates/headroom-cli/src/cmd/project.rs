//! `headroom project add|list|show|rm`: the user's own training, named once (folder, Python,
//! command with `{batch}` and `{device}`), kept in the configuration.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use headroom_core::project::{self, Project};

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Add a project: `headroom project add NAME --dir DIR [--python PATH] -- python train.py --batch-size {batch}`.
    Add {
        name: String,
        /// The folder it runs in [default: this one].
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The Python that runs `python` in the command [default: the one on PATH].
        #[arg(long)]
        python: Option<PathBuf>,
        /// Replace a project of that name.
        #[arg(long)]
        replace: bool,
        #[arg(long)]
        json: bool,
        /// The command, after `--`, with {batch} and {device} where those values go.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    /// List the projects.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one project.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove a project (its runs stay in the ledger).
    Rm {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

fn absolute(p: PathBuf) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p
    } else {
        std::env::current_dir()?.join(p)
    })
}

fn print(p: &Project) {
    println!("{}", p.name);
    println!("  folder   {}", p.dir.display());
    println!(
        "  python   {}",
        p.python
            .as_ref()
            .map_or_else(|| "the one on PATH".into(), |x| x.display().to_string())
    );
    println!("  command  {}", p.command.join(" "));
}

/// A project as JSON, its name included.
fn doc(p: &Project) -> serde_json::Value {
    serde_json::json!({
        "name": p.name,
        "dir": p.dir,
        "python": p.python,
        "command": p.command,
    })
}

pub fn run(c: &ProjectCommand) -> Result<ExitCode> {
    match c {
        ProjectCommand::Add {
            name,
            dir,
            python,
            replace,
            json,
            command,
        } => {
            let dir = match dir {
                Some(d) => absolute(d.clone())?,
                None => std::env::current_dir()?,
            };
            let p = Project {
                name: name.clone(),
                dir: dir.canonicalize().unwrap_or(dir),
                python: python.clone().map(absolute).transpose()?,
                command: command.clone(),
            };
            p.validate()?;
            headroom_core::project::check_usable(&p)?;
            project::add(&p, *replace)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&doc(&p))?);
            } else {
                eprintln!("headroom: project {} added", p.name);
                print(&p);
                if !p.has("batch") {
                    eprintln!(
                        "headroom: its command has no {{batch}}, so `headroom run --project {} --sweep batch=auto` cannot sweep it; add it where the batch size goes",
                        p.name
                    );
                }
            }
        }
        ProjectCommand::List { json } => {
            let all = project::load()?;
            if *json {
                let v: Vec<serde_json::Value> = all.values().map(doc).collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else if all.is_empty() {
                eprintln!("headroom: no projects yet; `headroom project add NAME --dir DIR -- python train.py --batch-size {{batch}}` adds one");
            } else {
                for p in all.values() {
                    println!(
                        "{:<20} {}  ({})",
                        p.name,
                        p.command.join(" "),
                        p.dir.display()
                    );
                }
            }
        }
        ProjectCommand::Show { name, json } => {
            let p = project::get(name)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&doc(&p))?);
            } else {
                print(&p);
            }
        }
        ProjectCommand::Rm { name, json } => {
            let removed = project::remove(name)?;
            if *json {
                println!(
                    "{}",
                    serde_json::json!({ "name": name, "removed": removed })
                );
            } else if removed {
                eprintln!("headroom: project {name} removed (its runs stay in the ledger)");
            } else {
                anyhow::bail!("no project named {name:?}; `headroom project list` shows them");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
