//! `headroom remote migrate`: the steps from a host profile to the user's project running on a
//! freshly rented machine, each one gated on the one before, re-runnable, and failing with its
//! fix. The state of every step is kept in a file under Headroom's data folder (not in the app's
//! webview), so the CLI and the app resume where either stopped.
//!
//! Built so far: the host, the key (installed the way `ssh-copy-id` does, with a password read
//! once and never stored), the check (with the free disk in the remote folder), Headroom there
//! (copied with its libtorch from an installed bundle when the remote runs the same OS and
//! architecture), and the project copied with `rsync` over the same ssh, verified by checksum,
//! with its Python environment recreated from its requirements, and the project's training run
//! there with `headroom run`, recorded in this ledger under the host's name, compared with a run
//! here and judged by the decision table, and the remote screen reached through an SSH tunnel.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::project::Project;
use crate::remote::check::{self, sh_quote, CheckOptions};
use crate::remote::HostProfile;
use crate::CoreError;

// One module per step (host, key, reach, headroom, project, training, compare, screen); what
// they share (the state, the context, running a command there) stays here.
mod compare;
mod headroom;
mod host;
mod key;
mod project;
mod reach;
mod screen;
mod training;

use self::compare::*;
pub use self::headroom::*;
use self::host::*;
use self::key::*;
pub use self::project::*;
pub use self::reach::*;
use self::screen::*;
pub use self::training::*;

/// One step of the migration, in order.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Host,
    Key,
    Check,
    Headroom,
    Project,
    Training,
    Compare,
    Screen,
}

impl Step {
    pub const ALL: [Self; 8] = [
        Self::Host,
        Self::Key,
        Self::Check,
        Self::Headroom,
        Self::Project,
        Self::Training,
        Self::Compare,
        Self::Screen,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Key => "key",
            Self::Check => "check",
            Self::Headroom => "headroom",
            Self::Project => "project",
            Self::Training => "training",
            Self::Compare => "compare",
            Self::Screen => "screen",
        }
    }

    /// What the step does, for a list.
    pub fn title(self) -> &'static str {
        match self {
            Self::Host => "the host profile",
            Self::Key => "a key that opens it",
            Self::Check => "reachable, with room in the remote folder",
            Self::Headroom => "Headroom there",
            Self::Project => "your project there, verified, with its environment",
            Self::Training => "your training there",
            Self::Compare => "here and there side by side",
            Self::Screen => "the remote screen",
        }
    }

    pub fn parse(s: &str) -> Result<Self, CoreError> {
        Self::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .ok_or_else(|| {
                CoreError::InvalidInput(format!(
                    "no migration step {s:?}: the steps are {}",
                    Self::ALL.map(Self::as_str).join(", ")
                ))
            })
    }
}

/// How one step went, the last time it ran.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub step: Step,
    pub passed: bool,
    /// What it found or did, with the figures.
    pub detail: String,
    /// What to do about a failure.
    pub fix: Option<String>,
    pub at: String,
    pub seconds: f64,
    /// The ledger runs the step made or compared (training: the one recorded here; compare:
    /// here's, then there's), for the app to draw.
    #[serde(default)]
    pub runs: Vec<i64>,
}

/// A migration of one project to one host: where it goes and how each step went.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Migration {
    pub host: String,
    pub project: String,
    /// The project's folder on the remote (relative paths start at the login folder).
    pub remote_dir: String,
    /// Paths the project step would leave out (what git ignores, environment folders) that the
    /// user asked to copy all the same, as the step's detail names them (`data`, `.venv`).
    #[serde(default)]
    pub also_copy: Vec<String>,
    pub steps: BTreeMap<Step, StepResult>,
}

impl Migration {
    pub fn new(host: &str, project: &str, remote_dir: Option<&str>) -> Self {
        Self {
            host: host.to_owned(),
            project: project.to_owned(),
            remote_dir: remote_dir.map_or_else(|| default_remote_dir(project), str::to_owned),
            also_copy: Vec::new(),
            steps: BTreeMap::new(),
        }
    }

    /// Where migration state lives: `<data>/migrations/<host>--<project>.json`.
    pub fn path(host: &str, project: &str) -> Result<PathBuf, CoreError> {
        Ok(crate::paths::data_dir()?
            .join("migrations")
            .join(format!("{host}--{project}.json")))
    }

    /// The saved state, or a new one; a `remote_dir` given changes where the project goes (and
    /// the steps that depend on it run again).
    pub fn load_or_new(
        host: &str,
        project: &str,
        remote_dir: Option<&str>,
    ) -> Result<Self, CoreError> {
        let path = Self::path(host, project)?;
        let mut m = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str::<Self>(&text).map_err(|e| {
                CoreError::InvalidInput(format!(
                    "the migration state in {} is not readable ({e}); delete it to start over",
                    path.display()
                ))
            })?,
            Err(_) => Self::new(host, project, remote_dir),
        };
        if let Some(d) = remote_dir.filter(|d| *d != m.remote_dir) {
            m.remote_dir = d.to_owned();
            m.steps.retain(|s, _| *s < Step::Check);
        }
        Ok(m)
    }

    /// Asks the project step to copy these paths too (trimmed, blank ones dropped); a change
    /// makes the project step and those after it run again.
    pub fn set_also_copy(&mut self, paths: &[String]) {
        let mut want: Vec<String> = paths
            .iter()
            .map(|p| p.trim().trim_matches('/').to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        want.sort();
        want.dedup();
        if want != self.also_copy {
            self.also_copy = want;
            self.steps.retain(|s, _| *s < Step::Project);
        }
    }

    pub fn save(&self) -> Result<(), CoreError> {
        let path = Self::path(&self.host, &self.project)?;
        if let Some(dir) = path.parent() {
            crate::paths::ensure_dir(dir)?;
        }
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(&path, text).map_err(|source| CoreError::Io {
            what: "cannot write the migration state",
            path: path.display().to_string(),
            source,
        })
    }

    /// The first step that has not passed: where a resumed migration goes on.
    pub fn next_step(&self) -> Option<Step> {
        Step::ALL
            .into_iter()
            .find(|s| !self.steps.get(s).is_some_and(|r| r.passed))
    }

    /// Whether every step before `step` passed (a step runs only then).
    pub fn gate(&self, step: Step) -> Result<(), CoreError> {
        match Step::ALL
            .into_iter()
            .take_while(|s| *s < step)
            .find(|s| !self.steps.get(s).is_some_and(|r| r.passed))
        {
            Some(s) => Err(CoreError::InvalidInput(format!(
                "step {} needs step {} ({}) to pass first: run `headroom remote migrate {} --project {} --step {}`",
                step.as_str(),
                s.as_str(),
                s.title(),
                self.host,
                self.project,
                s.as_str()
            ))),
            None => Ok(()),
        }
    }
}

impl Migration {
    /// The batch its training continues at on the host, and where that batch came from: the
    /// batch the training step's sweep there recommended; else the newest recommendation of a
    /// sweep of the project here (the host may hold less); `None` when neither exists.
    pub fn continue_batch(&self, ledger: &crate::ledger::Ledger) -> Option<(u32, String)> {
        let recommended = |id: i64| {
            ledger
                .get_run(id)
                .ok()
                .and_then(|(r, _)| r.summary?.recommended_batch)
        };
        if let Some(step) = self.steps.get(&Step::Training).filter(|s| s.passed) {
            if let Some((id, b)) = step
                .runs
                .iter()
                .find_map(|id| recommended(*id).map(|b| (*id, b)))
            {
                return Some((
                    b,
                    format!("recommended by the sweep on {} (run {id})", self.host),
                ));
            }
        }
        crate::evidence::project_batch(ledger, &self.project)
            .ok()
            .flatten()
            .map(|(b, id)| (b, format!("recommended by the sweep here (run {id})")))
    }
}

/// Where a project goes when no folder is given: `headroom-projects/<project>` under the login
/// folder.
pub fn default_remote_dir(project: &str) -> String {
    format!("headroom-projects/{project}")
}

/// What a step needs.
pub struct Context<'a> {
    pub profile: &'a HostProfile,
    pub project: &'a Project,
    pub remote_dir: &'a str,
    /// [`Migration::also_copy`].
    pub also_copy: &'a [String],
    /// The password for the key step's install, read once by the caller and never stored.
    pub password: Option<&'a str>,
    pub timeout: Duration,
    /// Progress lines (rsync's, pip's).
    pub on: &'a mut dyn FnMut(&str),
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("profile", &self.profile.name)
            .field("project", &self.project.name)
            .field("remote_dir", &self.remote_dir)
            .finish_non_exhaustive()
    }
}

struct Outcome {
    passed: bool,
    detail: String,
    fix: Option<String>,
    runs: Vec<i64>,
}

fn pass(detail: impl Into<String>) -> Outcome {
    Outcome {
        passed: true,
        detail: detail.into(),
        fix: None,
        runs: Vec::new(),
    }
}

fn fail(detail: impl Into<String>, fix: impl Into<String>) -> Outcome {
    Outcome {
        passed: false,
        detail: detail.into(),
        fix: Some(fix.into()),
        runs: Vec::new(),
    }
}

/// Runs `step` and records how it went in `m` (saved by the caller).
pub fn run_step(m: &mut Migration, step: Step, ctx: &mut Context<'_>) -> StepResult {
    let started = Instant::now();
    let o = match step {
        Step::Host => host_step(ctx.profile),
        Step::Key => key_step(ctx),
        Step::Check => check_step(ctx),
        Step::Headroom => headroom_step(ctx),
        Step::Project => project_step(ctx),
        Step::Training => training_step(ctx),
        Step::Compare => compare_step(ctx),
        Step::Screen => screen_step(ctx),
    };
    let r = StepResult {
        step,
        passed: o.passed,
        detail: o.detail,
        fix: o.fix,
        at: crate::time::now_rfc3339(),
        seconds: started.elapsed().as_secs_f64(),
        runs: o.runs,
    };
    m.steps.insert(step, r.clone());
    // A step run again invalidates the ones after it.
    if !r.passed {
        m.steps.retain(|s, _| *s <= step);
    }
    r
}

/// `ssh NAME SCRIPT` in batch mode, `stdin` written to the remote command.
fn remote(
    p: &HostProfile,
    script: &str,
    stdin: Option<&[u8]>,
    limit: Duration,
    connect: Duration,
) -> Result<crate::child::Finished, CoreError> {
    let mut c = check::ssh_command(p, connect)?;
    c.arg(&p.name).arg(script);
    run_fed(&mut c, stdin, limit)
}

/// Runs `cmd` for at most `limit`, writing `stdin` to it first.
fn run_fed(
    cmd: &mut Command,
    stdin: Option<&[u8]>,
    limit: Duration,
) -> Result<crate::child::Finished, CoreError> {
    let Some(input) = stdin else {
        return crate::child::run_within(cmd, limit).map_err(|e| spawn_err("ssh", &e));
    };
    // Small inputs (a public key): written before waiting, so the pipe never fills.
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_err("ssh", &e))?;
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(input);
    }
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                break;
            }
        }
    }
    let out = child.wait_with_output().map_err(|e| spawn_err("ssh", &e))?;
    Ok(crate::child::Finished {
        status: (started.elapsed() < limit).then_some(out.status),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

fn spawn_err(what: &str, e: &std::io::Error) -> CoreError {
    CoreError::InvalidInput(format!(
        "cannot start {what} ({e}): install OpenSSH's client (and rsync for the project step)"
    ))
}

#[cfg(test)]
mod tests;
