//! The About panel: this app's version and commit, and the `headroom` it starts workers from, in
//! that binary's own words (`headroom --version`: its version, its commit and the libtorch it
//! carries, asked of `headroom-worker` beside it). In an installed bundle they sit side by side,
//! so this is also how a user sees which libtorch came with the app. The answer is kept while
//! neither binary changes: asking loads libtorch (~0.4 s).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use headroom_core::jobs::{self, libtorch_in_version as libtorch_of};
use serde::Serialize;

use crate::error::AppError;

/// What the About panel shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct About {
    /// The app's version (Cargo's, the same as the bundle's).
    pub version: String,
    /// The commit the app was built from (`+dirty` when built from changed files).
    pub commit: String,
    /// The `headroom` binary workers run from.
    pub worker: Option<String>,
    /// Its `--version` line, as it printed it.
    pub worker_version: Option<String>,
    /// The libtorch version that binary runs with.
    pub libtorch: Option<String>,
    /// Why the binary could not be found or asked, with what to do.
    pub worker_error: Option<String>,
}

/// Why a `headroom --version` line has no libtorch (`libtorch unknown: <why>`), if it says.
fn libtorch_unknown_why(version_line: &str) -> Option<String> {
    let why =
        &version_line[version_line.find("libtorch unknown: ")? + "libtorch unknown: ".len()..];
    let why = why.strip_suffix(')').unwrap_or(why).trim();
    (!why.is_empty()).then(|| why.to_owned())
}

/// What identifies a build of `headroom` and its worker: their paths and modification times.
type Stamp = Vec<(PathBuf, Option<SystemTime>)>;

fn stamp(exe: &Path) -> Stamp {
    [exe.to_path_buf(), exe.with_file_name(jobs::TORCH_WORKER)]
        .into_iter()
        .map(|p| {
            let t = std::fs::metadata(&p).and_then(|m| m.modified()).ok();
            (p, t)
        })
        .collect()
}

/// The last successful `--version` answer and the binaries it came from.
static ASKED: Mutex<Option<(Stamp, String)>> = Mutex::new(None);

/// `ask` the version unless the same binaries (same paths and times) answered before.
fn version_of(exe: &Path, ask: impl FnOnce() -> Result<String, String>) -> Result<String, String> {
    let now = stamp(exe);
    if let Ok(g) = ASKED.lock() {
        if let Some((s, line)) = g.as_ref() {
            if *s == now {
                return Ok(line.clone());
            }
        }
    }
    let line = ask()?;
    if libtorch_of(&line).is_some() {
        if let Ok(mut g) = ASKED.lock() {
            *g = Some((now, line.clone()));
        }
    }
    Ok(line)
}

/// Runs `exe --version`, ending it after `limit`.
fn ask_version(exe: &Path, limit: Duration) -> Result<String, String> {
    let ran = headroom_probe::child::run_within(Command::new(exe).arg("--version"), limit)
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    match ran.status {
        None => Err(format!(
            "{} --version gave no answer in {} s",
            exe.display(),
            limit.as_secs()
        )),
        Some(status) if status.success() => Ok(ran.stdout.trim().to_owned()),
        Some(status) => Err(format!(
            "{} --version failed ({status}): {}. Reinstall Headroom, or build it with scripts/bootstrap.sh.",
            exe.display(),
            ran.stderr.trim()
        )),
    }
}

/// Gathers the About facts (blocking: starts `headroom --version`).
pub fn gather() -> About {
    let mut about = About {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        commit: env!("HEADROOM_COMMIT").to_owned(),
        worker: None,
        worker_version: None,
        libtorch: None,
        worker_error: None,
    };
    match jobs::worker_binary() {
        Err(e) => about.worker_error = Some(e.to_string()),
        Ok(exe) => {
            about.worker = Some(exe.display().to_string());
            match version_of(&exe, || ask_version(&exe, Duration::from_secs(20))) {
                Ok(line) => {
                    about.libtorch = libtorch_of(&line);
                    about.worker_error = libtorch_unknown_why(&line);
                    about.worker_version = Some(line);
                }
                Err(e) => about.worker_error = Some(e),
            }
        }
    }
    about
}

/// The About panel's facts.
#[tauri::command]
pub async fn about() -> Result<About, AppError> {
    crate::util::blocking(|| Ok(gather())).await
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn the_libtorch_version_is_read_off_the_version_line() {
        assert_eq!(
            libtorch_of("headroom 0.1.0 (commit 0123abcd4567+dirty, libtorch 2.11.0)").as_deref(),
            Some("2.11.0")
        );
        assert_eq!(
            libtorch_of("headroom 0.2.0 (commit unknown, libtorch 2.13.0+cu130)").as_deref(),
            Some("2.13.0+cu130")
        );
        assert_eq!(libtorch_of("headroom 0.1.0"), None);
        assert_eq!(libtorch_of("headroom (libtorch )"), None);
        // A `headroom` whose worker is missing says so in place of the version.
        let lone = "headroom 0.1.0 (commit 0123abcd4567, libtorch unknown: headroom-worker is \
                    missing from /opt/x (it is the part…): reinstall Headroom)";
        assert_eq!(libtorch_of(lone), None);
        let why = libtorch_unknown_why(lone).expect("a reason");
        assert!(
            why.starts_with("headroom-worker is missing from /opt/x")
                && why.ends_with("reinstall Headroom"),
            "{why}"
        );
        assert_eq!(
            libtorch_unknown_why("headroom 0.1.0 (commit x, libtorch 2.11.0)"),
            None
        );
    }

    /// The answer is kept while the binaries stay the same, asked again when one changes, and
    /// an answer without a libtorch is never kept.
    #[test]
    fn the_version_is_asked_once_per_build() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("headroom");
        std::fs::write(&exe, "a").expect("write");
        std::fs::write(dir.path().join(jobs::TORCH_WORKER), "b").expect("write");
        let asks = std::cell::Cell::new(0);
        let ask = |line: &str| {
            asks.set(asks.get() + 1);
            Ok(line.to_owned())
        };
        let good = "headroom 0.1.0 (commit c, libtorch 2.11.0)";
        assert_eq!(version_of(&exe, || ask(good)).as_deref(), Ok(good));
        assert_eq!(version_of(&exe, || ask("other")).as_deref(), Ok(good));
        assert_eq!(asks.get(), 1, "the same build is asked once");
        // A new worker (another modification time) is asked again.
        let later = SystemTime::now() + Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(dir.path().join(jobs::TORCH_WORKER))
            .and_then(|f| f.set_modified(later))
            .expect("touch");
        let newer = "headroom 0.1.0 (commit c, libtorch 2.12.0)";
        assert_eq!(version_of(&exe, || ask(newer)).as_deref(), Ok(newer));
        assert_eq!(asks.get(), 2);
        // Another binary whose worker is missing: asked every time, never kept.
        let lone = dir.path().join("lone").join("headroom");
        std::fs::create_dir_all(lone.parent().expect("dir")).expect("mkdir");
        std::fs::write(&lone, "c").expect("write");
        let bad = "headroom 0.1.0 (commit c, libtorch unknown: headroom-worker is missing)";
        assert_eq!(version_of(&lone, || ask(bad)).as_deref(), Ok(bad));
        assert_eq!(version_of(&lone, || ask(bad)).as_deref(), Ok(bad));
        assert_eq!(asks.get(), 4);
    }

    /// A binary that is missing, fails or hangs is named with what went wrong (the real one is
    /// asked in the e2e test, through the window).
    #[test]
    fn a_missing_or_broken_binary_gives_a_clear_error() {
        let e = ask_version(Path::new("/nonexistent/headroom"), Duration::from_secs(2))
            .expect_err("no such file");
        assert!(e.contains("cannot start /nonexistent/headroom"), "{e}");
        let e = ask_version(Path::new("/bin/false"), Duration::from_secs(5)).expect_err("fails");
        assert!(e.contains("failed") && e.contains("Reinstall"), "{e}");
        let dir = tempfile::tempdir().expect("tempdir");
        let slow = dir.path().join("slow");
        std::fs::write(&slow, "#!/bin/sh\nsleep 30\n").expect("write");
        let mut p = std::fs::metadata(&slow).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
        std::fs::set_permissions(&slow, p).expect("chmod");
        let t = Instant::now();
        let e = ask_version(&slow, Duration::from_secs(1)).expect_err("hangs");
        assert!(e.contains("no answer in 1 s"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10));
    }
}
