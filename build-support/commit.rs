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
}
