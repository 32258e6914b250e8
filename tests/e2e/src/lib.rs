//! Nothing but the end-to-end test in `tests/app.rs` (run by `scripts/e2e.sh`).
