//! What runs things, free of libtorch and Tauri: the jobs (the worker's supervisor, sweeps, the
//! user's sweep, epochs, profile, doctor, `headroom run`, the decision now, the migration to a
//! remote host), the observer put inside the user's training (`instrument`), memory readings
//! (`readings`), remote hosts (`remote`), MLX, git state, and the evidence the decision weighs
//! (`evidence`). It stands on headroom-model (values), headroom-decide (the rules),
//! headroom-probe (this machine), headroom-store (Headroom's files) and headroom-report
//! (pictures and papers); the CLI and the app call into all of them.

pub mod evidence;
#[doc(hidden)]
pub mod fuzzing;
pub mod gitinfo;
pub mod instrument;
pub mod jobs;
pub mod kept;
pub mod menubar;
pub mod mlx;
pub mod project;
pub mod readings;
pub mod remote;

// The lower crates' modules, under the names core's own modules have always used
// (`crate::protocol`); callers name the lower crates themselves.
use headroom_model::{
    budget, epochs, failure, outcome, planner, protocol, requests, scriptsweep, stats, summary,
    time,
};
// Headroom's own files, and the one error.
use headroom_decide as decide;
pub use headroom_store::CoreError;
use headroom_store::{config, error, ledger, paths};
// Charts, reports and a dataset's checksums.
use headroom_report::report;
// The machine's readers.
use headroom_probe::{
    child, conditions, contention, gpu_busy, load, machine, mounts, readiness, sysmem,
};
