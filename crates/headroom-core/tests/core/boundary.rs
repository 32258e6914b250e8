//! The house's boundaries, checked on the dependency graph cargo resolves for this platform
//! (`cargo tree`, normal and build dependencies, followed transitively): the core sees neither
//! libtorch nor Tauri, the app never reaches libtorch, and `tch` enters the workspace through
//! `headroom-torch` alone. (None of these edges is platform-specific in the manifests.)

use std::collections::BTreeSet;
use std::process::Command;

/// The workspace's members (`cargo metadata --no-deps` reads only the manifests).
fn members() -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .args(["--manifest-path", root])
        .output()
        .expect("cargo metadata runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    v["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

/// The packages `package` reaches (itself excepted), or only its direct dependencies.
fn deps(package: &str, direct: bool) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let mut cmd = Command::new(cargo);
    cmd.args(["tree", "--offline", "--manifest-path", root, "-p", package])
        .args(["-e", "normal,build", "--prefix", "none"]);
    if direct {
        cmd.args(["--depth", "1"]);
    }
    let out = cmd.output().expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|name| name != package)
        .collect()
}

#[test]
fn the_core_sees_neither_libtorch_nor_tauri_and_the_app_never_reaches_libtorch() {
    let core = deps("headroom-core", false);
    assert!(
        core.contains("rusqlite"),
        "the check sees the core's graph: {core:?}"
    );
    for banned in ["tch", "torch-sys", "tauri", "wry", "tao"] {
        assert!(!core.contains(banned), "headroom-core reaches {banned}");
    }
    let app = deps("headroom-app", false);
    assert!(
        app.contains("tauri") && app.contains("headroom-core"),
        "{app:?}"
    );
    for banned in ["headroom-torch", "tch", "torch-sys"] {
        assert!(!app.contains(banned), "headroom-app reaches {banned}");
    }
    let members = members();
    assert!(members.len() >= 4, "{members:?}");
    let direct: Vec<&String> = members
        .iter()
        .filter(|m| deps(m, true).contains("tch"))
        .collect();
    assert_eq!(
        direct,
        ["headroom-torch"],
        "only headroom-torch depends on tch itself"
    );
    // The worker's crate reaches libtorch, and the CLI only through it.
    assert!(deps("headroom-cli", false).contains("torch-sys"));
}
