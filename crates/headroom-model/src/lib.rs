//! Headroom's vocabulary and pure logic: the one error code and [`error::Invalid`] input, units
//! (bytes and budgets, durations, statistics), the worker protocol, the sweep planner and its
//! summary, epochs and their verdict, the load a point was timed under, what the observer of a
//! user's training reports and what a run produced, `decide` (the rules, their symptoms and advice
//! as data), and `requests` (the one place inputs are checked). No files, processes, SQLite or
//! sockets: everything here is a value in and a value out, so the worker links it without the
//! rest of Headroom.

pub mod budget;
pub mod decide;
pub mod epochs;
pub mod error;
pub mod failure;
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
