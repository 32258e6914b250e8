// Shared by the build scripts of `headroom` and `headroom-app` (through `include!`): the commit a
// binary is built from, as `HEADROOM_COMMIT` (12 hex digits, `+dirty` when tracked files differ
// from it; `unknown` outside a git checkout, e.g. a source tarball).

fn git(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn emit_commit() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!(
        "cargo:rustc-env=HEADROOM_COMMIT={commit}{}",
        if dirty { "+dirty" } else { "" }
    );
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
    }
    // A commit moves the branch HEAD names, not HEAD itself (a symbolic ref): watch the
    // branch's file and packed-refs, where `git pack-refs` moves it (those that exist: cargo
    // reruns a script on every build for a path that is missing).
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        for name in [branch.as_str(), "packed-refs"] {
            let path = git(&["rev-parse", "--path-format=absolute", "--git-path", name]);
            if let Some(path) = path.filter(|p| std::path::Path::new(p).exists()) {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}
