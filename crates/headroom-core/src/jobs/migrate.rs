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

fn host_step(p: &HostProfile) -> Outcome {
    match p.validate() {
        Ok(()) => pass(format!(
            "{}: {}:{}{}",
            p.name,
            p.target(),
            p.port.unwrap_or(22),
            p.jump
                .as_ref()
                .map(|j| format!(" through {j}"))
                .unwrap_or_default()
        )),
        Err(e) => fail(
            e.to_string(),
            format!(
                "fix the profile: `headroom remote add {} … --replace`",
                p.name
            ),
        ),
    }
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

fn key_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let login = |t| remote(p, "true", None, t + Duration::from_secs(5), t);
    let f = match login(ctx.timeout) {
        Ok(f) => f,
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    if f.success() {
        return pass(format!("the key opens {} (a batch-mode login)", p.name));
    }
    let why = check::classify(p, &f.stderr, f.timed_out(), ctx.timeout);
    if why.kind != check::FailureKind::Auth {
        return fail(why.message, why.fix);
    }
    let Some(identity) = p.identity.as_deref() else {
        return fail(
            format!("{} refused every key offered, and the profile names no key file to install", p.name),
            format!("give the profile a key: `headroom remote add {} … --identity ~/.ssh/id_ed25519 --replace` (Headroom makes the key when the file does not exist)", p.name),
        );
    };
    let Some(password) = ctx.password else {
        return fail(
            format!("{} refused the key {identity}", p.name),
            format!("install it with your password, typed once and never stored: `headroom remote migrate {} --project {} --step key --password-stdin`, or by hand: `ssh-copy-id -i {identity}.pub {}`", p.name, ctx.project.name, p.target()),
        );
    };
    if let Err(e) = ensure_key(Path::new(identity)) {
        return fail(e.to_string(), "check that the key's folder is writable");
    }
    match install_key(p, Path::new(identity), password, ctx.timeout) {
        Ok(()) => {}
        Err(o) => return o,
    }
    match login(ctx.timeout) {
        Ok(f) if f.success() => pass(format!(
            "installed {identity}.pub in {}'s ~/.ssh/authorized_keys with your password (not stored); a batch-mode login now opens it",
            p.name
        )),
        Ok(f) => fail(
            format!("the key was installed but {} still refuses it: {}", p.name, f.stderr.trim()),
            "check the remote's ~/.ssh permissions (700) and authorized_keys (600), and whether its sshd allows public keys",
        ),
        Err(e) => fail(e.to_string(), "install OpenSSH's client"),
    }
}

/// Makes an ed25519 key at `path` when there is none (no passphrase, as the profile uses it in
/// batch mode).
fn ensure_key(path: &Path) -> Result<(), CoreError> {
    if path.exists() && path.with_extension(pub_ext(path)).exists() {
        return Ok(());
    }
    if let Some(d) = path.parent() {
        crate::paths::ensure_dir(d)?;
    }
    let f = crate::child::run_within(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "headroom", "-f"])
            .arg(path),
        Duration::from_secs(20),
    )
    .map_err(|e| spawn_err("ssh-keygen", &e))?;
    if f.success() {
        Ok(())
    } else {
        Err(CoreError::InvalidInput(format!(
            "ssh-keygen could not make {}: {}",
            path.display(),
            f.stderr.trim()
        )))
    }
}

fn pub_ext(path: &Path) -> String {
    match path.extension() {
        Some(e) => format!("{}.pub", e.to_string_lossy()),
        None => "pub".into(),
    }
}

/// Appends the public key of `identity` to the remote's `authorized_keys` (once), logging in with
/// `password` through an askpass helper that reads it from a FIFO in a private folder: the
/// password is never written to a file, an argument or the environment.
fn install_key(
    p: &HostProfile,
    identity: &Path,
    password: &str,
    timeout: Duration,
) -> Result<(), Outcome> {
    let public = std::fs::read(identity.with_extension(pub_ext(identity))).map_err(|e| {
        fail(
            format!("cannot read {}.pub: {e}", identity.display()),
            "make the key again (delete the private key file and run this step again)",
        )
    })?;
    let dir = tempdir().map_err(|e| fail(e, "check that the temp folder is writable"))?;
    let fifo = dir.join("pw");
    let askpass = dir.join("askpass");
    let made = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes())
        .ok()
        .is_some_and(|c| unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0);
    let script = format!("#!/bin/sh\ncat {}\n", sh_quote(&fifo.display().to_string()));
    let wrote = made && std::fs::write(&askpass, script).is_ok() && set_mode(&askpass, 0o700);
    if !wrote {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(fail(
            "cannot make the private password channel",
            "check that the temp folder is writable",
        ));
    }
    // The writer blocks until the helper reads; it is unblocked below if ssh never asks.
    let secret = format!("{password}\n");
    let fifo_w = fifo.clone();
    let writer = std::thread::spawn(move || {
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo_w) {
            let _ = f.write_all(secret.as_bytes());
        }
    });
    // The password login: no key, one prompt, answered by the helper.
    let words = match check::ssh_words(p, timeout, false) {
        Ok(w) => w,
        Err(e) => return Err(fail(e.to_string(), "set HEADROOM_SSH_DIR or HOME")),
    };
    let mut c = Command::new(&words[0]);
    c.args(&words[1..])
        .args([
            "-o",
            "PubkeyAuthentication=no",
            "-o",
            "PreferredAuthentications=password,keyboard-interactive",
            "-o",
            "NumberOfPasswordPrompts=1",
        ])
        .arg(&p.name)
        .arg("umask 077; mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && read -r k && { grep -qxF \"$k\" ~/.ssh/authorized_keys || printf '%s\\n' \"$k\" >> ~/.ssh/authorized_keys; }")
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force");
    let f = run_fed(&mut c, Some(&public), timeout + Duration::from_secs(10));
    // Unblock the writer if the helper never ran, then forget everything.
    if !writer.is_finished() {
        let _ = std::fs::File::open(&fifo);
    }
    let _ = writer.join();
    let _ = std::fs::remove_dir_all(&dir);
    match f {
        Ok(f) if f.success() => Ok(()),
        Ok(f) => {
            let e = f.stderr.trim();
            if e.contains("Permission denied") {
                Err(fail(
                    format!("{} refused the password", p.name),
                    "type the password again (the rental's login password), or install the key by hand with `ssh-copy-id`",
                ))
            } else {
                let why = check::classify(p, e, f.timed_out(), timeout);
                Err(fail(why.message, why.fix))
            }
        }
        Err(e) => Err(fail(e.to_string(), "install OpenSSH's client")),
    }
}

fn set_mode(path: &Path, mode: u32) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).is_ok()
}

/// A private (0700) temp folder.
fn tempdir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    for i in 0..100u32 {
        let d = base.join(format!("headroom-askpass-{}-{i}", std::process::id()));
        if std::fs::create_dir(&d).is_ok() {
            if set_mode(&d, 0o700) {
                return Ok(d);
            }
            let _ = std::fs::remove_dir_all(&d);
        }
    }
    Err(format!(
        "cannot make a private folder in {}",
        base.display()
    ))
}

/// The available KiB in `df -Pk`'s output (POSIX format: the 4th field of the last line).
pub fn parse_df_available(text: &str) -> Option<u64> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let kib: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Room a project needs on the remote beyond its own bytes (its environment is made there).
pub const DISK_MARGIN: u64 = 64 << 20;

fn check_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let opts = CheckOptions {
        timeout: ctx.timeout,
        doctor: false,
        ..CheckOptions::default()
    };
    let r = match check::check(p, &opts) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    if !r.ok {
        let f = r.failure.unwrap_or(check::Failure {
            kind: check::FailureKind::Other,
            message: "the check failed".into(),
            fix: "run `headroom remote check NAME`".into(),
        });
        return fail(f.message, f.fix);
    }
    let dir = sh_quote(ctx.remote_dir);
    let df = remote(
        p,
        &format!("mkdir -p {dir} && df -Pk {dir}"),
        None,
        ctx.timeout + Duration::from_secs(10),
        ctx.timeout,
    );
    let free = match df {
        Ok(f) if f.success() => parse_df_available(&f.stdout),
        Ok(f) => {
            return fail(
                format!(
                    "cannot make the remote folder {}: {}",
                    ctx.remote_dir,
                    f.stderr.trim()
                ),
                "choose a folder the remote user may write: --remote-dir DIR",
            )
        }
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    let need = project_bytes(&ctx.project.dir).saturating_add(DISK_MARGIN);
    let fmt = crate::budget::format_bytes;
    let figures = format!(
        "{}: RTT {}, {} {}, {} memory",
        p.name,
        r.rtt_ms
            .map_or_else(|| "?".into(), |v| format!("{v:.1} ms")),
        r.os.as_deref().unwrap_or("?"),
        r.arch.as_deref().unwrap_or("?"),
        r.memory_bytes.map_or_else(|| "?".into(), fmt)
    );
    match free {
        Some(f) if f >= need => pass(format!(
            "{figures}; {} free in {} (the project needs {})",
            fmt(f),
            ctx.remote_dir,
            fmt(need)
        )),
        Some(f) => fail(
            format!(
                "{figures}; only {} free in {} on {}, and the project needs {} (its files and {} for its environment)",
                fmt(f),
                ctx.remote_dir,
                p.name,
                fmt(need),
                fmt(DISK_MARGIN)
            ),
            "free space there, or choose a folder on a larger disk with --remote-dir DIR",
        ),
        None => fail(
            format!("{figures}; `df -Pk {}` gave no free-space figure", ctx.remote_dir),
            "check that the remote has a POSIX df",
        ),
    }
}

/// Where Headroom goes on a remote it is copied to, relative to the login folder.
pub const REMOTE_HOME: &str = ".headroom";

/// This Headroom as files another machine of the same OS and architecture runs as they are: the
/// two binaries and the libtorch folder the worker's rpath names (`../lib/headroom` beside a
/// Linux bundle's binaries, `../Frameworks` in Headroom.app).
#[derive(Debug, Clone)]
pub struct Portable {
    pub headroom: PathBuf,
    pub worker: PathBuf,
    pub libs: PathBuf,
    /// Where the libraries go under [`REMOTE_HOME`], so the worker's rpath finds them there.
    pub libs_under: &'static str,
}

/// The portable form of the running Headroom, or why it has none (a development build links the
/// libtorch of the venv it was built with, which another machine lacks).
pub fn portable() -> Result<Portable, String> {
    let headroom = crate::jobs::worker_binary().map_err(|e| e.to_string())?;
    let worker = crate::jobs::torch_worker_beside(&headroom).map_err(|e| e.to_string())?;
    let dir = headroom.parent().unwrap_or_else(|| Path::new("."));
    let libs_under = if cfg!(target_os = "macos") {
        "Frameworks"
    } else {
        "lib/headroom"
    };
    let libs = dir.join("..").join(libs_under);
    if libs.is_dir() {
        Ok(Portable {
            headroom,
            worker,
            libs,
            libs_under,
        })
    } else {
        Err(format!(
            "this Headroom ({}) is a development build: its libtorch is the one it was built with, not a folder beside it ({} is missing)",
            headroom.display(),
            libs.display()
        ))
    }
}

/// `uname -s` / `uname -m` in Rust's names: `Linux`/`x86_64` → `linux`/`x86_64`, `Darwin`/`arm64`
/// → `macos`/`aarch64`.
pub fn rust_platform(os: &str, arch: &str) -> (String, String) {
    let os = match os.trim() {
        "Darwin" => "macos".to_owned(),
        o => o.to_lowercase(),
    };
    let arch = match arch.trim() {
        "arm64" => "aarch64".to_owned(),
        "amd64" => "x86_64".to_owned(),
        a => a.to_owned(),
    };
    (os, arch)
}

fn headroom_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let version = |p: &HostProfile| {
        remote(
            p,
            &format!("{} --version", sh_quote(&check::remote_headroom(p))),
            None,
            ctx.timeout + Duration::from_secs(20),
            ctx.timeout,
        )
    };
    match version(p) {
        Ok(f) if f.success() => {
            return pass(format!(
                "{} answers on {}; its doctor: {}",
                f.stdout.trim(),
                p.name,
                doctor_lights(p, ctx.timeout)
            ));
        }
        Ok(_) => {}
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    }
    // Not there: copy this Headroom when the remote runs what it was built for.
    let (os, arch, remote_home) = match remote_platform(p, ctx.timeout) {
        Ok(x) => x,
        Err(o) => return o,
    };
    let here = (std::env::consts::OS, std::env::consts::ARCH);
    let install_there = format!(
        "install Headroom on {} for {os} {arch} (the .deb on Linux, Headroom.app on macOS, built by `bash scripts/bundle.sh` on such a machine), then name it: `headroom remote add {} … --headroom-path PATH --replace`",
        p.name, p.name
    );
    if (os.as_str(), arch.as_str()) != here {
        return fail(
            format!("Headroom does not answer on {}, which runs {os} {arch}; this machine runs {} {}, so its binaries cannot be copied there", p.name, here.0, here.1),
            install_there,
        );
    }
    let bundle = match portable() {
        Ok(b) => b,
        Err(why) => {
            return fail(
                format!("Headroom does not answer on {}; {why}", p.name),
                format!("run this step from an installed Headroom (the .deb or Headroom.app, which carry their libtorch), or {install_there}"),
            )
        }
    };
    (ctx.on)(&format!(
        "copying Headroom and its libtorch to {}:{REMOTE_HOME}",
        p.name
    ));
    let bin = format!("{REMOTE_HOME}/bin");
    let libs = format!("{REMOTE_HOME}/{}", bundle.libs_under);
    let copy = remote(
        p,
        &format!("mkdir -p {} {}", sh_quote(&bin), sh_quote(&libs)),
        None,
        ctx.timeout + Duration::from_secs(10),
        ctx.timeout,
    )
    .and_then(|_| {
        rsync_paths(
            p,
            &[bundle.headroom.as_path(), bundle.worker.as_path()],
            &bin,
            ctx.timeout,
            &mut *ctx.on,
        )
    })
    .and_then(|f| {
        if f.success() {
            rsync(
                p,
                &bundle.libs,
                &libs,
                &[],
                &[],
                ctx.timeout,
                Some(&mut *ctx.on),
            )
        } else {
            Ok(f)
        }
    });
    match copy {
        Ok(f) if f.success() => {}
        Ok(f) => {
            let e = last_line(&f.stderr);
            let fix = if e.contains("No space left") {
                "free space on the remote's login disk".to_owned()
            } else {
                install_there.clone()
            };
            return fail(format!("copying Headroom to {} failed: {e}", p.name), fix);
        }
        Err(e) => return fail(e.to_string(), "install rsync here and on the remote"),
    }
    let path = if remote_home.starts_with('/') {
        format!("{remote_home}/{bin}/headroom")
    } else {
        format!("{bin}/headroom")
    };
    let installed = HostProfile {
        headroom_path: Some(path.clone()),
        ..p.clone()
    };
    let answer = match version(&installed) {
        Ok(f) if f.success() => f.stdout.trim().to_owned(),
        Ok(f) => {
            return fail(
                format!(
                    "Headroom was copied to {}:{bin} but does not start there: {}",
                    p.name,
                    last_line(&f.stderr)
                ),
                install_there,
            )
        }
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    if let Err(e) = crate::remote::Hosts::load().and_then(|mut h| {
        h.add(installed.clone(), true)?;
        h.save()
    }) {
        return fail(
            format!(
                "{answer} runs on {} but the profile could not be saved: {e}",
                p.name
            ),
            "check that Headroom's folder is writable",
        );
    }
    let lights = doctor_lights(&installed, ctx.timeout);
    pass(format!(
        "copied {} and its libtorch ({}) to {}:{REMOTE_HOME}; {answer} answers there (the profile's headroom path is now {path}); its doctor: {lights}",
        bundle.headroom.display(),
        bundle.libs.display(),
        p.name
    ))
}

/// The remote doctor's lights ("cpu: green, mps: red"), or why there are none: one ssh call of
/// `doctor --json` (no round trips timed, unlike a whole `remote check`).
fn doctor_lights(p: &HostProfile, timeout: Duration) -> String {
    match check::doctor_lights(p, timeout) {
        Ok(Ok(lights)) if lights.is_empty() => "no lights".into(),
        Ok(Ok(lights)) => lights.join(", "),
        Ok(Err(why)) => why,
        Err(e) => e.to_string(),
    }
}

/// Copies `files` into the remote folder `dest` with rsync over the profile's ssh.
fn rsync_paths(
    p: &HostProfile,
    files: &[&Path],
    dest: &str,
    timeout: Duration,
    on: &mut dyn FnMut(&str),
) -> Result<crate::child::Finished, CoreError> {
    let mut c = Command::new("rsync");
    c.arg("-aL").arg("-e").arg(rsync_shell(p, timeout)?);
    c.args(files);
    c.arg(format!("{}:{}/", p.name, dest));
    run_rsync(&mut c, Some(on))
}

/// Runs an rsync command line for up to an hour; with `on`, asks for its running total where
/// this rsync can give one and hands each update to `on` (at most two a second).
fn run_rsync(
    c: &mut Command,
    on: Option<&mut dyn FnMut(&str)>,
) -> Result<crate::child::Finished, CoreError> {
    let limit = Duration::from_secs(3600);
    let f = match on {
        Some(on) => {
            c.args(progress_flags());
            // rsync rewrites its line many times a second and repeats the final one.
            let mut last: Option<(Instant, u8)> = None;
            let mut shown = |l: &str| {
                if let Some(copied) = parse_progress2(l) {
                    let due = match last {
                        None => true,
                        Some((_, 100)) => false,
                        Some((t, _)) => {
                            copied.percent == 100 || t.elapsed() >= Duration::from_millis(500)
                        }
                    };
                    if due {
                        last = Some((Instant::now(), copied.percent));
                        on(&copied.to_string());
                    }
                }
            };
            crate::child::run_streamed(c, limit, crate::child::Pipe::Stdout, &mut shown)
        }
        None => crate::child::run_within(c, limit),
    };
    f.map_err(|e| spawn_err("rsync", &e))
}

/// rsync's flags for a running total of the whole copy (`--info=progress2`, rsync 3.1 and
/// later), or none where this rsync lacks them (macOS's own rsync 2.6.9 and openrsync).
fn progress_flags() -> &'static [&'static str] {
    static FLAGS: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    FLAGS.get_or_init(|| {
        let version = crate::child::run_within(
            Command::new("rsync").arg("--version"),
            Duration::from_secs(10),
        )
        .map(|f| f.stdout)
        .unwrap_or_default();
        flags_for(&version)
    })
}

/// The flags for a running total from `rsync --version`'s text: its first line reads `rsync  version
/// 3.2.7  protocol version 31`.
pub fn flags_for(version: &str) -> &'static [&'static str] {
    let release = version.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next() == Some("rsync") && w.next() == Some("version"))
            .then(|| w.next())
            .flatten()
    });
    let parts: Vec<u32> = release
        .unwrap_or("")
        .split('.')
        .map_while(|n| n.parse().ok())
        .collect();
    match parts.as_slice() {
        [major, minor, ..] if (*major, *minor) >= (3, 1) => {
            &["--info=progress2", "--no-inc-recursive"]
        }
        _ => &[],
    }
}

/// One update of rsync's `--info=progress2` line: `21,430,272  71%   19.55MB/s    0:00:00
/// (xfr#1, to-chk=1/3)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Copied {
    pub bytes: u64,
    pub percent: u8,
    pub rate: String,
    pub eta: String,
}

impl std::fmt::Display for Copied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "copied {} % ({}) at {}, {} left",
            self.percent,
            crate::budget::format_bytes(self.bytes),
            self.rate,
            self.eta
        )
    }
}

/// Reads one `--info=progress2` update; anything else (stats, file names) is `None`.
pub fn parse_progress2(line: &str) -> Option<Copied> {
    let mut w = line.split_whitespace();
    let bytes = w.next()?.replace(',', "").parse().ok()?;
    let percent = w.next()?.strip_suffix('%')?.parse().ok()?;
    let rate = w.next().filter(|r| r.ends_with("/s"))?.to_owned();
    let eta = w.next().filter(|e| e.contains(':'))?.to_owned();
    Some(Copied {
        bytes,
        percent,
        rate,
        eta,
    })
}

fn last_line(s: &str) -> &str {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// Folders never copied: environments and caches that the remote makes for itself.
pub const NEVER_COPIED: &[&str] = &[
    ".venv",
    "venv",
    "__pycache__",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".pytest_cache",
    "node_modules",
];

/// What `rsync` leaves out of the project: [`NEVER_COPIED`] and, in a git repository, what git
/// ignores (`.git` itself is kept).
pub fn excludes(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = NEVER_COPIED.iter().map(|s| format!("/{s}/")).collect();
    out.extend(NEVER_COPIED.iter().map(|s| format!("{s}/")));
    if let Ok(f) = crate::child::run_within(
        Command::new("git").arg("-C").arg(dir).args([
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ]),
        Duration::from_secs(20),
    ) {
        if f.success() {
            out.extend(
                f.stdout
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(|l| format!("/{}", l.trim_end_matches('/'))),
            );
        }
    }
    out.sort();
    out.dedup();
    out
}

/// [`excludes`] less what the user asked to copy (`also`, as [`left_out`] names them).
pub fn excludes_but(dir: &Path, also: &[String]) -> Vec<String> {
    let asked = |e: &str| {
        also.iter()
            .any(|a| a.trim_matches('/') == e.trim_matches('/'))
    };
    excludes(dir).into_iter().filter(|e| !asked(e)).collect()
}

/// The paths at the project's top level that `excludes` leaves out and that exist, as a user
/// names them (`data`, `.venv`), for the step to say what stayed here.
pub fn left_out(dir: &Path, excludes: &[String]) -> Vec<String> {
    let mut out: Vec<String> = excludes
        .iter()
        .filter(|e| e.starts_with('/'))
        .map(|e| e.trim_matches('/').to_owned())
        .filter(|e| !e.is_empty() && dir.join(e).exists())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Bytes of the files the project step copies (an estimate: [`NEVER_COPIED`] left out).
pub fn project_bytes(dir: &Path) -> u64 {
    fn walk(d: &Path, top: bool) -> u64 {
        let Ok(rd) = std::fs::read_dir(d) else {
            return 0;
        };
        rd.flatten()
            .map(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                match e.file_type() {
                    Ok(t) if t.is_dir() => {
                        if NEVER_COPIED.contains(&name.as_ref()) || (top && name == "target") {
                            0
                        } else {
                            walk(&e.path(), false)
                        }
                    }
                    Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
                    _ => 0,
                }
            })
            .sum()
    }
    walk(dir, true)
}

/// The `-e` command rsync runs: the same ssh, quoted for rsync's own splitting.
fn rsync_shell(p: &HostProfile, timeout: Duration) -> Result<String, CoreError> {
    Ok(check::ssh_words(p, timeout, true)?
        .iter()
        .map(|w| sh_quote(w))
        .collect::<Vec<_>>()
        .join(" "))
}

fn rsync(
    p: &HostProfile,
    src: &Path,
    dest: &str,
    excludes: &[String],
    extra: &[&str],
    timeout: Duration,
    on: Option<&mut dyn FnMut(&str)>,
) -> Result<crate::child::Finished, CoreError> {
    let mut c = Command::new("rsync");
    c.arg("-a")
        .args(extra)
        .arg("-e")
        .arg(rsync_shell(p, timeout)?);
    for e in excludes {
        c.arg(format!("--exclude={e}"));
    }
    c.arg(format!("{}/", src.display()))
        .arg(format!("{}:{}/", p.name, dest));
    run_rsync(&mut c, on)
}

/// How long the training step lets the project's command run there: long enough for its first
/// epochs and a settled step time, short of a whole training run.
pub const TRAINING_SECONDS: u64 = 120;

/// The project's command as the remote runs it: `{batch}` and `{device}` filled in, and
/// `python`/`python3` (or the project's own interpreter here) as the environment the project
/// step made there.
/// With `batch` `None`, `{batch}` is left for a sweep there to fill.
pub fn remote_argv(project: &Project, batch: Option<u32>, device: &str) -> Vec<String> {
    let mut argv = crate::project::fill(&project.command, batch, Some(device));
    if let Some(first) = argv.first_mut() {
        if matches!(first.as_str(), "python" | "python3")
            || project
                .python
                .as_deref()
                .is_some_and(|p| Path::new(first.as_str()) == p)
        {
            *first = ".venv/bin/python".into();
        }
    }
    argv
}

/// The device the remote's training runs on (`os`, `arch` in Rust's names): MPS on Apple
/// Silicon, else the CPU.
pub fn remote_device(os: &str, arch: &str) -> &'static str {
    if os == "macos" && arch == "aarch64" {
        "mps"
    } else {
        "cpu"
    }
}

/// What the remote runs, in Rust's names, and its login folder: `uname -s`, `uname -m` and
/// `$HOME` asked over ssh.
fn remote_platform(
    p: &HostProfile,
    timeout: Duration,
) -> Result<(String, String, String), Outcome> {
    match remote(
        p,
        "uname -s; uname -m; echo \"$HOME\"",
        None,
        timeout + Duration::from_secs(10),
        timeout,
    ) {
        Ok(f) if f.success() => {
            let mut lines = f.stdout.lines();
            let (os, arch) = rust_platform(lines.next().unwrap_or(""), lines.next().unwrap_or(""));
            Ok((os, arch, lines.next().unwrap_or("").trim().to_owned()))
        }
        Ok(f) => Err(fail(
            format!(
                "cannot ask {} what it runs: {}",
                p.name,
                last_line(&f.stderr)
            ),
            "run the check step again",
        )),
        Err(e) => Err(fail(e.to_string(), "install OpenSSH's client")),
    }
}

/// How long the sweep there may take in all, and one start of it: its batch found on that
/// machine's own memory, not borrowed from this one's.
pub const SWEEP_SECONDS: u64 = 900;
pub const POINT_SECONDS: u64 = TRAINING_SECONDS;
/// Seconds the doctor there may give the project's Python (and its libtorch) before the
/// training step goes on without its report.
pub const DOCTOR_SECONDS: u64 = 60;

fn training_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let ledger = match crate::jobs::open_ledger() {
        Ok(l) => l,
        Err(e) => return fail(e.to_string(), "check that Headroom's folder is writable"),
    };
    let device =
        remote_platform(p, ctx.timeout).map_or("cpu", |(os, arch, _)| remote_device(&os, &arch));
    doctor_there(ctx, &ledger);
    // A command that takes the batch is swept there (batch=auto); one that does not runs once.
    if ctx.project.has("batch") {
        return sweep_there(ctx, &ledger, device);
    }
    // Its command sets its own batch (the observer reads it from the DataLoader).
    let argv = remote_argv(ctx.project, None, device);
    (ctx.on)(&format!(
        "running the project there on {device}, at the batch its command sets (at most {TRAINING_SECONDS} s)"
    ));
    let out: crate::jobs::watch::WatchOutcome = match headroom_run_there(
        ctx,
        &format!("--max-seconds {TRAINING_SECONDS}"),
        &argv,
        Duration::from_secs(TRAINING_SECONDS + 120),
        "`headroom run` of the project",
    ) {
        Ok(o) => o,
        Err(failed) => return failed,
    };
    let command = argv.join(" ");
    let observed_device = out
        .observed
        .as_ref()
        .and_then(|o| o.device.clone())
        .unwrap_or_else(|| device.to_owned());
    let status = if out.interrupted {
        crate::ledger::RunStatus::Interrupted
    } else if out.exit_code == Some(0) || (out.stopped_at_limit && out.steps > 0) {
        crate::ledger::RunStatus::Complete
    } else {
        crate::ledger::RunStatus::Failed
    };
    let id = ledger
        .begin_run(&crate::ledger::NewRun {
            kind: crate::ledger::RunKind::Run,
            host: p.name.clone(),
            device: observed_device.clone(),
            device_name: command.chars().take(120).collect(),
            workload: command.chars().take(200).collect(),
            dtype: None,
            mode: None,
            libtorch: out.torch_version.clone().unwrap_or_else(|| "unknown".into()),
            git_commit: None,
            git_dirty: None,
            budget_bytes: None,
            fallback: None,
            request_json: serde_json::json!({
                "command": command,
                "batch": out.batch,
                "tag": { "project": ctx.project.name, "migrated_to": p.name, "remote_run": out.run_id },
            })
            .to_string(),
            owner_pid: Some(std::process::id()),
        })
        .and_then(|id| {
            for e in &out.epochs {
                ledger.add_sample(id, 100_000 + e.epoch, "epoch", e)?;
            }
            ledger.finish_watch(
                id,
                status,
                &out,
                out.batch,
                out.peak_tree_bytes,
                out.fallback,
                &format!("run {} on {}: {}", out.run_id, p.name, out.verdict.reason),
            )?;
            Ok(id)
        });
    let id = match id {
        Ok(id) => id,
        Err(e) => {
            return fail(
                format!(
                    "the run on {} finished but could not be recorded here: {e}",
                    p.name
                ),
                "check that Headroom's folder is writable",
            )
        }
    };
    let figures = format!(
        "{} steps, {} samples/s, its processes peaking at {}",
        out.steps,
        out.samples_per_s
            .map_or_else(|| "?".into(), |v| format!("{v:.1}")),
        crate::budget::format_bytes(out.peak_tree_bytes)
    );
    if status == crate::ledger::RunStatus::Complete {
        pass(format!(
            "ran `{command}` in {} on {} ({observed_device}): {figures}; recorded here as run {id} under host {} (run {} there)",
            ctx.remote_dir, p.name, p.name, out.run_id
        ))
    } else {
        fail(
            format!(
                "`{command}` on {} ended {} ({figures}); recorded here as run {id}: {}",
                p.name,
                status.as_str(),
                out.verdict.reason
            ),
            format!("run it there by hand to see its output: `ssh {} 'cd {} && .venv/bin/python …'`, fix the project or its requirements, then this step again", p.name, ctx.remote_dir),
        )
    }
}

/// `headroom run --json ARGS -- ARGV` in the project's folder there, over ssh: its own lines
/// (the command's, `headroom run`'s notes) streamed as "there: …" while it runs, its JSON result
/// read; `what` names it in the failure.
fn headroom_run_there<T: serde::de::DeserializeOwned>(
    ctx: &mut Context<'_>,
    args: &str,
    argv: &[String],
    limit: Duration,
    what: &str,
) -> Result<T, Outcome> {
    let p = ctx.profile;
    let script = format!(
        "cd {} && {} run --json {args} -- {}",
        sh_quote(ctx.remote_dir),
        sh_quote(&check::remote_headroom(p)),
        argv.iter()
            .map(|a| sh_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let on = &mut *ctx.on;
    let f = check::ssh_command(p, ctx.timeout)
        .and_then(|mut c| {
            c.arg(&p.name).arg(&script);
            crate::child::run_streamed(&mut c, limit, crate::child::Pipe::Stderr, &mut |l| {
                on(&format!("there: {l}"));
            })
            .map_err(|e| spawn_err("ssh", &e))
        })
        .map_err(|e| fail(e.to_string(), "install OpenSSH's client"))?;
    serde_json::from_str(&f.stdout).map_err(|_| {
        fail(
            format!("{what} on {} gave no result: {}", p.name, last_line(&f.stderr)),
            "run the headroom and project steps again (Headroom and the environment must be there), then this one",
        )
    })
}

/// Headroom's doctor there, on the project's environment (`.venv/bin/python`), recorded here as
/// a doctor run under the host's name: the machine, the Python, the torch build and its MPS
/// flags that the runs there are then compared by. A doctor that gives no report is said and
/// passed over: the training step does not hang on it.
fn doctor_there(ctx: &mut Context<'_>, ledger: &crate::ledger::Ledger) -> Option<i64> {
    let p = ctx.profile;
    (ctx.on)(&format!(
        "asking Headroom's doctor on {} about the project's environment",
        p.name
    ));
    let script = format!(
        "cd {} && {} doctor --json --only-named --python .venv/bin/python --timeout {}",
        sh_quote(ctx.remote_dir),
        sh_quote(&check::remote_headroom(p)),
        DOCTOR_SECONDS
    );
    let said = remote(
        p,
        &script,
        None,
        Duration::from_secs(2 * DOCTOR_SECONDS + 30),
        ctx.timeout,
    )
    .map_err(|e| e.to_string())
    .and_then(|f| {
        serde_json::from_str::<crate::readiness::Report>(&f.stdout)
            .map_err(|_| format!("no report: {}", last_line(&f.stderr)))
    })
    .and_then(|report| {
        crate::jobs::doctor::record_for(ledger, &p.name, &report, r#"{"from":"migrate"}"#)
            .map(|id| (id, report))
            .map_err(|e| e.to_string())
    });
    match said {
        Ok((id, report)) => {
            let lights: Vec<String> = report
                .lights
                .iter()
                .map(|l| format!("{}: {}", l.backend, l.state.as_str()))
                .collect();
            (ctx.on)(&format!(
                "doctor there: {}; recorded here as run {id}",
                lights.join(", ")
            ));
            Some(id)
        }
        Err(why) => {
            (ctx.on)(&format!(
                "doctor there gave no report ({why}); its facts stay unknown in the comparison"
            ));
            None
        }
    }
}

/// The search the project's sweep here ran (its first and largest batch, and the batch it
/// chose), so the sweep there searches the same range; `run`'s defaults when there was none.
fn search_here(ledger: &crate::ledger::Ledger, project: &str) -> (u32, u32, Option<(u32, i64)>) {
    let (mut start, mut max) = (16, 65536);
    let chosen = crate::facts::project_batch(ledger, project).ok().flatten();
    if let Some((_, id)) = chosen {
        let req = request_of(ledger, id);
        let field = |k: &str| {
            req.as_ref()
                .and_then(|r| r.get(k))
                .and_then(serde_json::Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .filter(|v| *v > 0)
        };
        start = field("start").unwrap_or(start);
        max = field("max").unwrap_or(max);
    }
    (start, max, chosen)
}

/// The project's batch=auto sweep on the remote (`headroom run --sweep batch=auto` there, its
/// lines streamed), recorded here as a sweep under the host's name with every point.
fn sweep_there(ctx: &mut Context<'_>, ledger: &crate::ledger::Ledger, device: &str) -> Outcome {
    let p = ctx.profile;
    let (start, max, here) = search_here(ledger, &ctx.project.name);
    let argv = remote_argv(ctx.project, None, device);
    let command = argv.join(" ");
    (ctx.on)(&format!(
        "sweeping the project there on {device}: batch=auto from {start} up to {max}, each start at most {POINT_SECONDS} s{}",
        here.map_or_else(String::new, |(b, run)| format!(" (here sweep {run} chose batch {b})"))
    ));
    let out: crate::jobs::usersweep::ScriptSweepOutcome = match headroom_run_there(
        ctx,
        &format!(
            "--sweep batch=auto --start-batch {start} --max-batch {max} --point-seconds {POINT_SECONDS}"
        ),
        &argv,
        Duration::from_secs(SWEEP_SECONDS + 60),
        "the sweep of the project",
    ) {
        Ok(o) => o,
        Err(failed) => return failed,
    };
    let id = match record_sweep(ledger, &p.name, &ctx.project.name, &out, (start, max)) {
        Ok(id) => id,
        Err(e) => {
            return fail(
                format!(
                    "the sweep on {} finished but could not be recorded here: {e}",
                    p.name
                ),
                "check that Headroom's folder is writable",
            )
        }
    };
    let s = &out.sweep;
    let there_device = out.device.clone().unwrap_or_else(|| device.to_owned());
    let best = s
        .summary
        .as_ref()
        .and_then(|sum| sum.recommended_batch)
        .and_then(|b| {
            s.points
                .iter()
                .find(|pt| pt.batch == b && pt.samples_per_s.is_some())
        });
    let measured = s
        .points
        .iter()
        .filter(|pt| pt.samples_per_s.is_some())
        .count();
    let remote_run = format!(
        "{}{}",
        s.run_id
            .map_or_else(String::new, |r| format!(" (run {r} there)")),
        there_cautions(&p.name, s)
    );
    match best {
        Some(pt) => Outcome {
            runs: vec![id],
            ..pass(format!(
                "swept `{command}` in {} on {} ({there_device}): batch {} recommended there, {} samples/s, peaking at {}{}; {measured} of {} batches measured; recorded here as sweep {id} under host {}{remote_run}",
                ctx.remote_dir,
                p.name,
                pt.batch,
                pt.samples_per_s.map_or_else(|| "?".into(), |v| format!("{v:.1}")),
                pt.peak_bytes.map_or_else(|| "?".into(), crate::budget::format_bytes),
                here.map_or_else(String::new, |(b, _)| if b == pt.batch {
                    " (the same batch as here)".to_owned()
                } else {
                    format!(" (here: batch {b})")
                }),
                s.points.len(),
                p.name
            ))
        },
        None => fail(
            format!(
                "the sweep of `{command}` on {} measured no batch ({}); recorded here as sweep {id}",
                p.name,
                s.error.as_ref().map_or_else(
                    || s.points.first().and_then(|pt| pt.message.clone()).unwrap_or_else(|| "no point ran".into()),
                    |e| e.message.clone()
                )
            ),
            format!("run it there by hand to see its output: `ssh {} 'cd {} && {}'`, fix the project or its requirements, then this step again", p.name, ctx.remote_dir, argv.iter().map(|a| if a == "{batch}" { "16" } else { a.as_str() }).collect::<Vec<_>>().join(" ")),
        ),
    }
}

/// A remote sweep's doubt, said as that machine's: its cautions (other work, memory pressure,
/// noise) were read there, so "timed while zoom.us used 1.4 cores" names a process on `host`.
/// Empty when its answer is not in doubt.
fn there_cautions(host: &str, s: &crate::jobs::sweep::SweepOutcome) -> String {
    let Some(u) = s.summary.as_ref().and_then(|sum| sum.uncertain.as_ref()) else {
        return String::new();
    };
    let first = s
        .points
        .iter()
        .flat_map(crate::protocol::Point::cautions)
        .next();
    format!(
        ". On {host}, {u}{}",
        first.map_or_else(String::new, |c| format!(" (there, {c})"))
    )
}

/// Records a sweep the remote ran (its every point and its answer) in this ledger, under the
/// host's name, tagged with the project and the run there.
fn record_sweep(
    ledger: &crate::ledger::Ledger,
    host: &str,
    project: &str,
    out: &crate::jobs::usersweep::ScriptSweepOutcome,
    (start, max): (u32, u32),
) -> Result<i64, CoreError> {
    use crate::ledger::{NewRun, RunKind, RunStatus};
    let s = &out.sweep;
    let id = ledger.begin_run(&NewRun {
        kind: RunKind::Sweep,
        host: host.to_owned(),
        device: out.device.clone().unwrap_or_else(|| "script".into()),
        device_name: out.command.chars().take(120).collect(),
        workload: out.command.chars().take(200).collect(),
        dtype: None,
        mode: None,
        libtorch: s
            .hello
            .as_ref()
            .map_or_else(|| "unknown".into(), |h| h.libtorch.clone()),
        git_commit: None,
        git_dirty: None,
        budget_bytes: s.hello.as_ref().map(|h| h.budget_bytes),
        fallback: None,
        request_json: serde_json::json!({
            "script": true,
            "command": out.command,
            "start": start,
            "max": max,
            "tag": { "project": project, "migrated_to": host, "remote_run": s.run_id },
        })
        .to_string(),
        owner_pid: Some(std::process::id()),
    })?;
    for (seq, pt) in s.points.iter().enumerate() {
        ledger.add_point(id, u32::try_from(seq).unwrap_or(u32::MAX), pt)?;
    }
    let status = match s.status {
        crate::jobs::JobStatus::Complete => RunStatus::Complete,
        crate::jobs::JobStatus::Interrupted => RunStatus::Interrupted,
        _ => RunStatus::Failed,
    };
    let note = format!(
        "sweep {} on {host}{}",
        s.run_id.map_or_else(|| "?".into(), |r| r.to_string()),
        s.error
            .as_ref()
            .map_or_else(String::new, |e| format!(": {}", e.message))
    );
    ledger.finish_run(id, status, s.summary.as_ref(), Some(&note))?;
    Ok(id)
}

/// The project a run measured, from its request's tag.
fn project_of(ledger: &crate::ledger::Ledger, id: i64) -> Option<String> {
    let req = request_of(ledger, id)?;
    req.get("project")
        .or_else(|| req.get("tag").and_then(|t| t.get("project")))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

/// Whether a sweep is a device comparison's baseline (its request names the sweep it serves).
fn is_baseline(ledger: &crate::ledger::Ledger, id: i64) -> bool {
    request_of(ledger, id).is_some_and(|req| req.get("baseline_of").is_some_and(|b| !b.is_null()))
}

/// A run's request, as recorded with it.
fn request_of(ledger: &crate::ledger::Ledger, id: i64) -> Option<serde_json::Value> {
    serde_json::from_str(&ledger.request_json(id).ok()??).ok()
}

/// One figure of a run's report (a wrapped run's outcome).
fn figure(r: &crate::ledger::RunRecord, key: &str) -> Option<f64> {
    r.report.as_ref()?.get(key)?.as_f64()
}

fn compare_step(ctx: &mut Context<'_>) -> Outcome {
    use crate::ledger::{RunKind, RunStatus};
    let p = ctx.profile;
    let ledger = match crate::jobs::open_ledger() {
        Ok(l) => l,
        Err(e) => return fail(e.to_string(), "check that Headroom's folder is writable"),
    };
    let runs = match ledger.list_runs(500) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string(), "check the ledger: `headroom ledger list`"),
    };
    // A run stopped before its end counts when it measured steps: Watch my training ends
    // that way when the user stops it.
    let ours = |r: &&crate::ledger::RunRecord| {
        r.kind == RunKind::Run
            && (r.status == RunStatus::Complete
                || (r.status == RunStatus::Interrupted
                    && figure(r, "samples_per_s").is_some_and(|v| v > 0.0)))
            && project_of(&ledger, r.id).as_deref() == Some(ctx.project.name.as_str())
    };
    // The project's sweeps: the one there (the training step) against the one here, each at
    // the batch it chose on its own machine.
    // (A device comparison's baseline, one point at the other device's batch, is not a sweep.)
    let swept = |r: &&crate::ledger::RunRecord| {
        r.kind == RunKind::Sweep
            && r.status == RunStatus::Complete
            && r.chosen_batch.is_some()
            && project_of(&ledger, r.id).as_deref() == Some(ctx.project.name.as_str())
            && !is_baseline(&ledger, r.id)
    };
    if let Some(there) = runs.iter().filter(swept).find(|r| r.host == p.name) {
        let Some(here) = runs.iter().filter(swept).find(|r| r.host != p.name) else {
            return fail(
                format!("{} was swept on {} (sweep {}), but never here, so there is nothing to compare it with", ctx.project.name, p.name, there.id),
                format!("sweep it here once: `headroom run --project {} --sweep batch=auto` (or Sweep my training in the app), then this step again", ctx.project.name),
            );
        };
        let at_chosen = |r: &crate::ledger::RunRecord| {
            let (_, points) = ledger.get_run(r.id).ok()?;
            points
                .into_iter()
                .find(|pt| Some(pt.batch) == r.chosen_batch && pt.samples_per_s.is_some())
        };
        let (Some(a), Some(b)) = (at_chosen(here), at_chosen(there)) else {
            return fail(
                format!(
                    "sweeps {} and {} name a batch they did not measure",
                    here.id, there.id
                ),
                "sweep the project again here and run the training step again",
            );
        };
        let side = |r: &crate::ledger::RunRecord, pt: &crate::protocol::Point| {
            format!(
                "batch {}, {} samples/s, step {} ms, peak {} (sweep {}, {} on {})",
                pt.batch,
                pt.samples_per_s
                    .map_or_else(|| "?".into(), |v| format!("{v:.1}")),
                pt.step_ms_p50
                    .map_or_else(|| "?".into(), |v| format!("{v:.1}")),
                pt.peak_bytes
                    .map_or_else(|| "?".into(), crate::budget::format_bytes),
                r.id,
                r.device,
                r.host
            )
        };
        let ratio = speed_ratio(&p.name, a.samples_per_s, b.samples_per_s);
        let tail = compare_tail(ctx, &ledger, here.id, there.id);
        return Outcome {
            runs: vec![here.id, there.id],
            ..pass(format!(
                "here: {}; there: {}; {ratio} at its own batch{tail}",
                side(here, &a),
                side(there, &b)
            ))
        };
    }
    let Some(there) = runs.iter().filter(ours).find(|r| r.host == p.name) else {
        return fail(
            format!(
                "no finished run of {} from {} in this ledger",
                ctx.project.name, p.name
            ),
            "run the training step first",
        );
    };
    let Some(here) = runs.iter().filter(ours).find(|r| r.host != p.name) else {
        return fail(
            format!("{} ran on {} (run {}), but never here, so there is nothing to compare it with", ctx.project.name, p.name, there.id),
            format!("run it here once: `headroom run --project {} --batch N` (or Watch my training in the app), then this step again", ctx.project.name),
        );
    };
    let side = |r: &crate::ledger::RunRecord| {
        format!(
            "{} samples/s, step {} ms, peak {} (run {}, {} on {})",
            figure(r, "samples_per_s").map_or_else(|| "?".into(), |v| format!("{v:.1}")),
            figure(r, "step_ms_p50").map_or_else(|| "?".into(), |v| format!("{v:.1}")),
            r.peak_bytes
                .map_or_else(|| "?".into(), crate::budget::format_bytes),
            r.id,
            r.device,
            r.host
        )
    };
    let ratio = speed_ratio(
        &p.name,
        figure(here, "samples_per_s"),
        figure(there, "samples_per_s"),
    );
    let tail = compare_tail(ctx, &ledger, here.id, there.id);
    Outcome {
        runs: vec![here.id, there.id],
        ..pass(format!(
            "here: {}; there: {}; {ratio}{tail}",
            side(here),
            side(there),
        ))
    }
}

/// "box is 72 % faster" (or slower) from the throughputs here and there.
fn speed_ratio(host: &str, here: Option<f64>, there: Option<f64>) -> String {
    match (here, there) {
        (Some(a), Some(b)) if a > 0.0 => {
            let c = b / a - 1.0;
            if c >= 0.0 {
                format!("{host} is {:.0} % faster", c * 100.0)
            } else {
                format!("{host} is {:.0} % slower", -c * 100.0)
            }
        }
        _ => "their throughputs cannot be compared (one run measured no steps)".into(),
    }
}

/// What the two runs differ in (the ledger's comparison) and the decision table's headline now.
fn compare_tail(
    ctx: &Context<'_>,
    ledger: &crate::ledger::Ledger,
    here: i64,
    there: i64,
) -> String {
    let differ: Vec<String> = crate::report::compare(ledger, here, there)
        .unwrap_or_default()
        .into_iter()
        .skip_while(|l| !l.starts_with("facts that differ"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_owned())
        // The host, the device and the command are said above already; "x vs unknown" (what
        // one side did not record) explains nothing.
        .filter(|l| {
            l.split_once(": ").is_none_or(|(k, v)| {
                !["host", "device", "workload"].contains(&k)
                    && v.split_once(" vs ")
                        .is_none_or(|(x, y)| !x.starts_with("unknown") && !y.starts_with("unknown"))
            })
        })
        .collect();
    let mut sampler = crate::contention::Sampler::new();
    let (now, _) = crate::jobs::decision::now(&mut sampler, Some(&ctx.project.name));
    format!(
        "{}; the decision table now: {}",
        if differ.is_empty() {
            String::new()
        } else {
            format!(" (they differ in {})", differ.join("; "))
        },
        now.decision.headline
    )
}

/// Reads the first line a VNC server sends (`RFB 003.008`) from `port` here, the local end of a
/// tunnel, within `limit`.
fn rfb_banner(port: u16, limit: Duration) -> Option<String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    let mut buf = [0u8; 12];
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let line = String::from_utf8_lossy(&buf[..got]).trim().to_owned();
    line.starts_with("RFB ").then_some(line)
}

fn screen_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let tunnel = match crate::remote::vnc::open_tunnel(p, None, ctx.timeout) {
        Ok(Ok(t)) => t,
        Ok(Err(f)) => return fail(f.message, f.fix),
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    match rfb_banner(tunnel.local_port, ctx.timeout) {
        Some(banner) => pass(format!(
            "{}'s screen (VNC port {}) answers through an SSH tunnel ({banner}): `headroom remote vnc {}` or Open VNC opens it in the viewer",
            p.name, p.vnc_port, p.name
        )),
        None => fail(
            format!("the tunnel to {} opened, but nothing that speaks VNC answers on its port {}", p.name, p.vnc_port),
            format!("turn on Screen Sharing there (macOS: System Settings → General → Sharing → Screen Sharing), or give the profile its port: `headroom remote add {} … --vnc-port N --replace`", p.name),
        ),
    }
}

/// The requirements file the remote environment is made from.
pub const REQUIREMENTS: &str = "requirements.txt";

fn project_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let src = &ctx.project.dir;
    if !src.is_dir() {
        return fail(
            format!("the project folder {} does not exist here", src.display()),
            format!(
                "fix the project: `headroom project add {} --dir DIR … --replace`",
                ctx.project.name
            ),
        );
    }
    let ex = excludes_but(src, ctx.also_copy);
    let stayed = left_out(src, &ex);
    (ctx.on)(&format!(
        "copying {} to {}:{} (rsync over ssh)",
        src.display(),
        p.name,
        ctx.remote_dir
    ));
    let copy = match rsync(
        p,
        src,
        ctx.remote_dir,
        &ex,
        &["--stats"],
        ctx.timeout,
        Some(&mut *ctx.on),
    ) {
        Ok(f) => f,
        Err(e) => return fail(e.to_string(), "install rsync here and on the remote"),
    };
    if !copy.success() {
        let e = last_line(&copy.stderr);
        let fix = if e.contains("No space left") {
            "free space there, or choose a folder on a larger disk with --remote-dir DIR"
        } else if e.contains("rsync: command not found") || e.contains("rsync: not found") {
            "install rsync on the remote (macOS has it; Debian: apt install rsync)"
        } else {
            "run the step again; if it fails the same way, copy the folder by hand with rsync"
        };
        return fail(format!("the copy to {} failed: {e}", p.name), fix);
    }
    let files = copy
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Number of regular files transferred: "))
        .map(|n| n.replace(',', ""))
        .unwrap_or_else(|| "?".into());
    // The copied tree against this one, file by file by checksum.
    let verify = match rsync(
        p,
        src,
        ctx.remote_dir,
        &ex,
        &["--checksum", "--dry-run", "--itemize-changes"],
        ctx.timeout,
        None,
    ) {
        Ok(f) => f,
        Err(e) => return fail(e.to_string(), "install rsync here and on the remote"),
    };
    let differ: Vec<&str> = verify
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(".d"))
        .collect();
    if !verify.success() || !differ.is_empty() {
        return fail(
            format!(
                "the copy on {} differs from the project here by checksum ({} file(s): {})",
                p.name,
                differ.len(),
                differ
                    .iter()
                    .take(3)
                    .copied()
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            "run the step again (it copies what differs)",
        );
    }
    let stayed_text = match stayed.len() {
        0 => "nothing ignored or environment-only left out".to_owned(),
        n => format!(
            "left out as ignored or environment-only: {}{} (copy any with --also-copy PATH, or the wizard's Also copy field)",
            stayed.iter().take(6).cloned().collect::<Vec<_>>().join(", "),
            if n > 6 { format!(" and {} more", n - 6) } else { String::new() }
        ),
    };
    let asked = if ctx.also_copy.is_empty() {
        String::new()
    } else {
        format!("; copied as asked: {}", ctx.also_copy.join(", "))
    };
    let copied = format!(
        "copied {} to {}:{} ({files} file(s) sent, .git kept; {stayed_text}{asked}), checksums match",
        src.display(),
        p.name,
        ctx.remote_dir,
    );
    if !src.join(REQUIREMENTS).is_file() {
        return fail(
            format!("{copied}; but the project has no {REQUIREMENTS} to make its environment from"),
            format!("write one in {} (`python -m pip freeze > {REQUIREMENTS}` in the project's environment, or list what it imports) and run this step again", src.display()),
        );
    }
    (ctx.on)(&format!(
        "making the environment on {} from {REQUIREMENTS}",
        p.name
    ));
    let dir = sh_quote(ctx.remote_dir);
    // pip's own lines (Collecting, Downloading, Installing…) as they come: unbuffered, no bar.
    let env = check::ssh_command(p, ctx.timeout).and_then(|mut c| {
        c.arg(&p.name).arg(format!("cd {dir} && python3 -m venv .venv && PYTHONUNBUFFERED=1 .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off -r {REQUIREMENTS}"));
        let on = &mut *ctx.on;
        crate::child::run_streamed(&mut c, Duration::from_secs(3600), crate::child::Pipe::Stdout, &mut |l| {
            on(&format!("pip: {l}"))
        })
        .map_err(|e| spawn_err("ssh", &e))
    });
    match env {
        Ok(f) if f.success() => pass(format!(
            "{copied}; environment {}/.venv made from {REQUIREMENTS}",
            ctx.remote_dir
        )),
        Ok(f) => fail(
            format!("{copied}; but its environment could not be made on {}: {}", p.name, last_line(&f.stderr)),
            "install Python 3 with venv on the remote (Debian: apt install python3-venv; macOS: python.org or Homebrew), or fix the requirement pip names, then run this step again",
        ),
        Err(e) => fail(e.to_string(), "install OpenSSH's client"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passed(step: Step) -> StepResult {
        StepResult {
            step,
            passed: true,
            detail: String::new(),
            fix: None,
            at: String::new(),
            seconds: 0.0,
            runs: Vec::new(),
        }
    }

    #[test]
    fn what_the_user_asks_to_copy_is_no_longer_left_out_and_runs_the_steps_after_again() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".venv")).expect("venv");
        std::fs::create_dir_all(dir.path().join("ckpt")).expect("ckpt");
        let all = excludes(dir.path());
        assert!(all.contains(&"/.venv/".to_owned()) && all.contains(&".venv/".to_owned()));
        // Named as the user sees them: those that exist, at the top.
        assert_eq!(left_out(dir.path(), &all), [".venv"]);
        let kept = excludes_but(dir.path(), &[".venv/".into()]);
        assert!(!kept.iter().any(|e| e.contains(".venv")), "{kept:?}");
        assert!(left_out(dir.path(), &kept).is_empty());
        assert!(kept.contains(&"/node_modules/".to_owned()));

        let mut m = Migration::new("box", "train", None);
        for s in [
            Step::Host,
            Step::Key,
            Step::Check,
            Step::Headroom,
            Step::Project,
            Step::Training,
        ] {
            m.steps.insert(s, passed(s));
        }
        m.set_also_copy(&[" data/ ".into(), String::new(), "data".into()]);
        assert_eq!(m.also_copy, ["data"]);
        assert_eq!(m.next_step(), Some(Step::Project));
        // The same ask again changes nothing.
        m.steps.insert(Step::Project, passed(Step::Project));
        m.set_also_copy(&["data".into()]);
        assert_eq!(m.next_step(), Some(Step::Training));
        m.set_also_copy(&[String::new()]);
        assert!(m.also_copy.is_empty());
        assert_eq!(m.next_step(), Some(Step::Project));
    }

    #[test]
    fn a_remote_sweeps_doubt_is_said_as_that_machines() {
        use crate::protocol::{Point, PointStatus};
        let ok = |batch: u32, sps: f64| {
            let mut p = Point::failed(batch, PointStatus::Ok, "");
            p.message = None;
            p.samples_per_s = Some(sps);
            p.peak_bytes = Some(1 << 20);
            p
        };
        let mut s = crate::jobs::sweep::SweepOutcome {
            status: crate::jobs::JobStatus::Complete,
            run_id: Some(3),
            ledger: String::new(),
            hello: None,
            points: vec![ok(16, 900.0), ok(32, 1700.0), ok(64, 1800.0)],
            summary: None,
            warnings: Vec::new(),
            error: None,
            worker_exit: None,
            stderr_tail: Vec::new(),
        };
        let summary = |s: &crate::jobs::sweep::SweepOutcome| {
            crate::summary::summarize(&s.points, crate::planner::Limit::MaxBatch, 1 << 30)
        };
        s.summary = Some(summary(&s));
        assert_eq!(there_cautions("box", &s), "");
        s.points[1].load = Some(crate::load::PointLoad {
            other_cores: 1.3,
            busiest: Some("zoom.us".into()),
            busiest_cores: 1.2,
            seconds: 2.0,
            pressure: None,
            pressure_detail: None,
            swap_growth_bytes: None,
            accel_others: Vec::new(),
        });
        s.summary = Some(summary(&s));
        let said = there_cautions("box", &s);
        assert!(
            said.starts_with(". On box, the answer rests on batch ")
                && said.contains("(there, batch 32 was timed while zoom.us used 1.2 cores"),
            "{said}"
        );
    }

    #[test]
    fn rsync_running_totals_are_read_and_asked_for_only_where_rsync_has_them() {
        // Captured here: `rsync -a --info=progress2 --no-inc-recursive --bwlimit=20000 src/ dst/`
        // over a 30 MB and a 5 kB file, and `rsync --version`, rsync 3.5.0 on Debian 12.
        let raw = include_str!("../../tests/fixtures/linux/rsync_progress2_debian12_3.5.0.txt");
        let updates: Vec<Copied> = raw
            .split(['\r', '\n'])
            .filter_map(parse_progress2)
            .collect();
        assert_eq!(updates.len(), 7, "{updates:?}");
        assert_eq!(
            updates[1],
            Copied {
                bytes: 21_430_272,
                percent: 71,
                rate: "19.55MB/s".into(),
                eta: "0:00:00".into()
            }
        );
        let last = updates.last().expect("last");
        assert_eq!((last.bytes, last.percent), (30_005_000, 100));
        assert!(
            last.to_string()
                .starts_with("copied 100 % (28.6 MiB) at 19.5"),
            "{last}"
        );
        assert_eq!(parse_progress2("Number of files: 3 (reg: 2, dir: 1)"), None);
        assert_eq!(
            parse_progress2("sent 30,012,345 bytes  received 57 bytes"),
            None
        );
        let version = include_str!("../../tests/fixtures/linux/rsync_version_debian12_3.5.0.txt");
        assert_eq!(
            flags_for(version),
            ["--info=progress2", "--no-inc-recursive"]
        );
        // macOS's own: rsync 2.6.9 and openrsync (which names 2.6.9 as what it is compatible with).
        assert!(flags_for("rsync  version 2.6.9  protocol version 29").is_empty());
        assert!(
            flags_for("openrsync: protocol version 29\nrsync version 2.6.9 compatible").is_empty()
        );
        assert!(flags_for("").is_empty());
    }

    #[test]
    fn the_remote_runs_the_project_with_its_own_environment() {
        let p = Project {
            name: "train".into(),
            dir: PathBuf::from("/home/ada/train"),
            python: Some(PathBuf::from("/home/ada/train/.venv/bin/python")),
            command: [
                "python",
                "train.py",
                "--batch-size",
                "{batch}",
                "--device",
                "{device}",
            ]
            .map(String::from)
            .to_vec(),
        };
        assert_eq!(
            remote_argv(&p, Some(64), "mps"),
            [
                ".venv/bin/python",
                "train.py",
                "--batch-size",
                "64",
                "--device",
                "mps"
            ]
        );
        let on = |os, arch| {
            let (o, a) = rust_platform(os, arch);
            remote_device(&o, &a)
        };
        assert_eq!(on("Darwin", "arm64"), "mps");
        assert_eq!(on("Darwin", "x86_64"), "cpu");
        assert_eq!(on("Linux", "x86_64"), "cpu");
    }

    #[test]
    fn uname_in_rust_s_names() {
        assert_eq!(
            rust_platform("Darwin\n", "arm64"),
            ("macos".into(), "aarch64".into())
        );
        assert_eq!(
            rust_platform("Linux", "x86_64"),
            ("linux".into(), "x86_64".into())
        );
        assert_eq!(
            rust_platform("Linux", "aarch64"),
            ("linux".into(), "aarch64".into())
        );
    }

    #[test]
    fn df_gives_the_available_bytes() {
        let linux = "Filesystem     1024-blocks    Used Available Capacity Mounted on\ntmpfs                 1024       4      1020       1% /tmp/x\n";
        assert_eq!(parse_df_available(linux), Some(1020 * 1024));
        let macos = "Filesystem   1024-blocks      Used Available Capacity  Mounted on\n/dev/disk3s5  482797652 301471328 148893612    67%    /System/Volumes/Data\n";
        assert_eq!(parse_df_available(macos), Some(148_893_612 * 1024));
        assert_eq!(parse_df_available(""), None);
        assert_eq!(
            parse_df_available("df: /nope: No such file or directory"),
            None
        );
    }

    #[test]
    fn steps_run_in_order_and_each_waits_for_the_ones_before() {
        let mut m = Migration::new("box", "train", None);
        assert_eq!(m.remote_dir, "headroom-projects/train");
        assert_eq!(m.next_step(), Some(Step::Host));
        assert!(m.gate(Step::Host).is_ok());
        let e = m.gate(Step::Project).expect_err("gated").to_string();
        assert!(e.contains("needs step host"), "{e}");
        for s in [Step::Host, Step::Key] {
            m.steps.insert(s, passed(s));
        }
        assert_eq!(m.next_step(), Some(Step::Check));
        assert!(m.gate(Step::Check).is_ok());
        assert!(m.gate(Step::Headroom).is_err());
        assert_eq!(Step::parse("project").ok(), Some(Step::Project));
        assert!(Step::parse("nope")
            .expect_err("bad")
            .to_string()
            .contains("host, key, check"));
    }
}
