//! End-to-end tests of the `headroom` binary: real sweeps through the real worker and libtorch on
//! the CPU, a real SQLite ledger in a temp `HEADROOM_HOME`, a TorchScript model exported by the
//! venv's Python, doctor against real interpreters, bad input, and a worker killed with SIGKILL mid-sweep.

mod cancel;
mod common;
mod conditions;
mod conformance;
mod contention;
mod decide;
mod doctor;
mod edits;
mod epochs;
mod errors;
mod fullfs;
mod injection;
mod keep;
// Every kill test follows processes through /proc.
#[cfg(target_os = "linux")]
mod kill;
mod migrate;
mod mlx;
mod notebook;
mod numerics;
mod observe;
mod practices;
mod profile;
mod project;
mod remote;
mod remote_runs;
mod report;
mod run;
#[path = "../../../../tests/support/sshd.rs"]
mod sshd;
mod sweep;
#[path = "../../../../tests/support/tmpfs.rs"]
mod tmpfs;
mod torchscript;
