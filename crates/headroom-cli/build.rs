//! Gives the `headroom` binary an rpath to the libtorch it was built against (so it runs without
//! `LD_LIBRARY_PATH`) and keeps `torch_cuda` linked on Linux, using what headroom-torch found;
//! and records the commit it is built from (`HEADROOM_COMMIT`, for `headroom --version`).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    // The commit, with `+dirty` when tracked files differ from it; `unknown` outside a checkout.
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
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_HEADROOM_TORCH_LIBTORCH_LIB");

    let Ok(lib) = std::env::var("DEP_HEADROOM_TORCH_LIBTORCH_LIB") else {
        return;
    };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" && std::path::Path::new(&lib).join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-L{lib},-ltorch_cuda,--as-needed");
    }
}
