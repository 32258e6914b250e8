//! Headroom's domain, free of libtorch and Tauri: the worker protocol, the sweep planner and its
//! statistics, byte/budget parsing, memory parsers for macOS and Linux command output, the paths
//! Headroom owns, and the SQLite ledger. The CLI, the worker and (later) the app all call into it;
//! it never links libtorch (readiness runs
//! the user's own Python interpreters as child processes to ask them what their torch can do).

pub mod facts;
#[doc(hidden)]
pub mod fuzzing;
pub mod gitinfo;
pub mod instrument;
pub mod jobs;
pub mod mlx;
pub mod monitor;
pub mod project;
pub mod remote;

// The pure crate's modules, where the rest of core and its callers have always found them.
pub use headroom_model::{
    budget, decide, epochs, failure, outcome, planner, pointload, protocol, requests, scriptsweep,
    stats, summary, time,
};
// Headroom's own files, and the one error.
pub use headroom_store::{config, error, ledger, paths, CoreError};
// Charts, reports and a dataset's checksums.
pub use headroom_report::{datasum, plot, report};
// The machine's readers.
pub use headroom_probe::{child, contention, gpu_busy, load, machine, mounts, readiness, sysmem};
