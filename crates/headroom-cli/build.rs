//! Gives the `headroom-worker` binary (the only one that links libtorch) an rpath to the libtorch
//! it was built against (so it runs without `LD_LIBRARY_PATH`) and keeps `torch_cuda` linked on
//! Linux, using what headroom-torch found; and records the commit both binaries are built from
//! (`HEADROOM_COMMIT`, for `--version`).

include!("../../build-support/commit.rs");

fn main() {
    emit_commit();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_HEADROOM_TORCH_LIBTORCH_LIB");

    let Ok(lib) = std::env::var("DEP_HEADROOM_TORCH_LIBTORCH_LIB") else {
        return;
    };
    println!("cargo:rustc-link-arg-bin=headroom-worker=-Wl,-rpath,{lib}");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" && std::path::Path::new(&lib).join("libtorch_cuda.so").exists() {
        println!(
            "cargo:rustc-link-arg-bin=headroom-worker=-Wl,--no-as-needed,-L{lib},-ltorch_cuda,--as-needed"
        );
    }
}
