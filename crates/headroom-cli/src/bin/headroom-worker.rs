//! `headroom-worker`: the one Headroom process that links libtorch. `headroom` (and the app)
//! start it through `headroom worker [--doctor]` for each job; it reads one JSON request on stdin
//! and writes protocol events to stdout (see `headroom_torch::serve`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `headroom worker --doctor` hands over its own arguments; a leading `worker` is accepted too.
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .skip_while(|a| *a == "worker")
        .collect();
    match args.as_slice() {
        [] => headroom_torch::serve::run(),
        ["--doctor"] => headroom_torch::serve::run_doctor(),
        ["--version" | "-V"] => {
            println!(
                "headroom-worker {} (commit {}, libtorch {})",
                env!("CARGO_PKG_VERSION"),
                env!("HEADROOM_COMMIT"),
                headroom_torch::alloc::libtorch_version()
            );
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "headroom-worker: unknown arguments {args:?}. It is Headroom's internal worker: \
                 `headroom` starts it with one JSON request on stdin (or --doctor, --version)"
            );
            ExitCode::from(2)
        }
    }
}
