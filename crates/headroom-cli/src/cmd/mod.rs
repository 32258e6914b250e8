//! One module per command.

pub mod doctor;
pub mod epochs;
pub mod ledger;
pub mod sweep;
pub mod watch;
pub mod worker;

/// Opens the ledger and closes the runs of this host whose headroom process died mid-run.
pub fn open_ledger() -> anyhow::Result<headroom_core::ledger::Ledger> {
    use anyhow::Context;
    headroom_core::jobs::open_ledger().context("cannot open the ledger")
}
