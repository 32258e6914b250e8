//! Step 5, the project there: copied with `rsync` over the same ssh (what is left out, progress),
//! verified by checksum, its Python environment recreated from its requirements.

use super::*;

/// Copies `files` into the remote folder `dest` with rsync over the profile's ssh.
pub(super) fn rsync_paths(
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
pub(super) fn run_rsync(
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
pub(super) fn progress_flags() -> &'static [&'static str] {
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

pub(super) fn last_line(s: &str) -> &str {
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
pub(super) fn rsync_shell(p: &HostProfile, timeout: Duration) -> Result<String, CoreError> {
    Ok(check::ssh_words(p, timeout, true)?
        .iter()
        .map(|w| sh_quote(w))
        .collect::<Vec<_>>()
        .join(" "))
}

pub(super) fn rsync(
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

/// The requirements file the remote environment is made from.
pub const REQUIREMENTS: &str = "requirements.txt";

pub(super) fn project_step(ctx: &mut Context<'_>) -> Outcome {
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
