//! The decision table: for this workload on this machine now, CPU, MPS, MLX or a remote host,
//! and why. [`decide`] is a pure function of [`Facts`] (what was measured) and
//! [`DecideThresholds`]; every reason it gives cites a figure and names its rule, and the
//! symptom table the UI shows next to a matched rule is data ([`SYMPTOMS`]).
//!
//! Its own crate, above `headroom-model` and beside the worker's: changing a rule rebuilds the
//! CLI and the app, never `headroom-worker`. Modules, one way: `table` (what it says) ← `facts`
//! (what it stands on) ← `board` (what the rules write on) ← `rules` ← `verdict`.

mod board;
mod facts;
mod rules;
mod table;
mod verdict;

pub use facts::{
    EpochFact, Facts, FallbackFact, MlxFact, NumericsFact, RemoteFact, RunFact, SlowLayerFact,
    SweepFact,
};
pub use headroom_model::settings::{DecideThresholds, WorkloadKind};
pub use table::{Column, ColumnVerdict, Decision, Reason, Rule, Status, Symptom, SYMPTOMS};
pub use verdict::decide;
