//! Headroom's vocabulary and pure logic: the one error code and [`error::Invalid`] input, units
//! (bytes and budgets, durations, statistics), the worker protocol, the sweep planner and its
//! summary, epochs and their verdict, the load a point was timed under, what the observer of a
//! user's training reports and what a run produced, the settings types (the decision rules'
//! thresholds among them), and `requests` (the one place inputs are checked). No files,
//! processes, SQLite or sockets: everything here is a value in and a value out, so the worker
//! links it without the rest of Headroom. The decision rules themselves are `headroom-decide`,
//! which the worker does not link: a rule changed rebuilds no worker.

pub mod budget;
pub mod conditions;
pub mod energy;
pub mod epochs;
pub mod error;
pub mod failure;
pub mod numerics;
pub mod observed;
pub mod outcome;
pub mod planner;
pub mod pointload;
pub mod protocol;
pub mod requests;
pub mod samples;
pub mod scriptsweep;
pub mod settings;
pub mod stats;
pub mod summary;
pub mod time;

pub use error::Invalid;
