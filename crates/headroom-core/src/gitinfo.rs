//! The git commit and dirty flag of a working directory, by asking the `git` command.

use std::path::Path;
use std::process::Command;

/// Commit and dirty flag; both `None` when `dir` is not in a git work tree or git is absent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GitState {
    pub commit: Option<String>,
    pub dirty: Option<bool>,
}

/// Reads the git state of `dir`.
pub fn git_state(dir: &Path) -> GitState {
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let Some(commit) = run(&["rev-parse", "HEAD"]).map(|s| s.trim().to_owned()) else {
        return GitState::default();
    };
    let dirty =
        run(&["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.trim().is_empty());
    GitState {
        commit: Some(commit),
        dirty,
    }
}
