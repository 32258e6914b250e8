//! Compiles the allocator shim against the libtorch that `torch-sys` found and tells the
//! binaries that link this crate where that libtorch lives (rpath) and to keep `torch_cuda`.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/shim/allocator.cpp");
    println!("cargo:rerun-if-changed=src/shim/layers.cpp");
    let lib = PathBuf::from(
        std::env::var("DEP_TCH_LIBTORCH_LIB")
            .expect("torch-sys did not report its libtorch lib dir (DEP_TCH_LIBTORCH_LIB)"),
    );
    let root = lib
        .parent()
        .expect("libtorch lib dir has a parent")
        .to_path_buf();
    let include = root.join("include");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();

    let mut build = cc::Build::new();
    build
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag("-DGLOG_USE_GLOG_EXPORT")
        .file("src/shim/allocator.cpp")
        .file("src/shim/layers.cpp");
    if target_os == "linux" {
        build.flag("-D_GLIBCXX_USE_CXX11_ABI=1");
    }
    build.compile("headroom_alloc_shim");

    // Exposed to dependents with a build script as DEP_HEADROOM_TORCH_LIBTORCH_LIB.
    println!("cargo:libtorch_lib={}", lib.display());
    emit_link_args(&lib, &target_os);
}

/// rpath to libtorch, and on Linux `torch_cuda` kept in NEEDED even though no symbol of it is
/// referenced directly: without it the CUDA backend never registers and CUDA is silently absent.
fn emit_link_args(lib: &std::path::Path, target_os: &str) {
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    if target_os == "linux" && lib.join("libtorch_cuda.so").exists() {
        println!(
            "cargo:rustc-link-arg=-Wl,--no-as-needed,-L{},-ltorch_cuda,--as-needed",
            lib.display()
        );
    }
}
