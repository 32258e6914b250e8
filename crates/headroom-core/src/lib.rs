//! Headroom's domain, free of libtorch and Tauri: the worker protocol, the sweep planner and its
//! statistics, byte/budget parsing, memory parsers for macOS and Linux command output, the paths
//! Headroom owns, and the SQLite ledger. The CLI, the worker and (later) the app all call into it;
//! it never links libtorch (readiness runs
//! the user's own Python interpreters as child processes to ask them what their torch can do).

pub mod budget;
pub mod child;
pub mod config;
pub mod contention;
pub mod datasum;
pub mod decide;
pub mod epochs;
pub mod error;
pub mod facts;
pub mod failure;
#[doc(hidden)]
pub mod fuzzing;
pub mod gitinfo;
pub mod gpu_busy;
pub mod instrument;
pub mod jobs;
pub mod ledger;
pub mod load;
pub mod machine;
pub mod mlx;
pub mod monitor;
pub mod mounts;
pub mod outcome;
pub mod paths;
pub mod planner;
pub mod plot;
pub mod pointload;
pub mod project;
pub mod protocol;
pub mod readiness;
pub mod remote;
pub mod report;
pub mod requests;
pub mod scriptsweep;
pub mod stats;
pub mod summary;
pub mod sysmem;
pub mod time;

pub use error::CoreError;
