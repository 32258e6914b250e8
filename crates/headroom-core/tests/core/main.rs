//! Integration tests of `headroom-core`, one binary: the ledger on a real SQLite file, readiness
//! parsers on real captured outputs and the verdict, and the sweep chart.

mod boundary;
mod fuzz;
mod gate;
mod ledger;
mod macos;
mod plot;
mod readiness;
