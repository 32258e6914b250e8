//! Tauri's build step, with Headroom's own commands as the only ones the UI may call
//! (capabilities/default.json grants exactly these).

/// The app's commands; each gets an `allow-…` permission.
const COMMANDS: &[&str] = &[
    "readiness",
    "last_readiness",
    "start_sweep",
    "cancel_sweep",
    "sweep_snapshot",
    "list_runs",
    "chart_for_run",
    "run_report",
    "export_runs",
    "compare_runs",
    "start_epochs",
    "list_processes",
    "start_watch",
    "stop_memory",
    "memory_snapshot",
    "overview",
    "list_hosts",
    "add_host",
    "remove_host",
    "list_keys",
    "make_key",
    "check_host",
    "migration",
    "open_vnc",
    "close_vnc",
    "about",
];

include!("../build-support/commit.rs");

fn main() {
    emit_commit();
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(e) = tauri_build::try_build(attributes) {
        panic!("tauri build step failed: {e:#}");
    }
}
