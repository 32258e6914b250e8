//! Headroom's own files: its folders, atomic writes and the edit lock (`paths`), the ledger of
//! every run (SQLite: plain storage, the caller gives it the run's context), the settings file
//! (`config`) and the projects in it, and [`CoreError`], the one error of the crates above the
//! model (the model's [`error::Invalid`] converts into it).

pub mod config;
pub mod error;
pub mod instance;
pub mod ledger;
pub mod paths;
pub mod project;

pub use error::CoreError;
