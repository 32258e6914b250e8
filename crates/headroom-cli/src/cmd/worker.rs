//! `headroom worker`: reads one [`Job`] JSON line on stdin (a sweep or an epochs run) and runs it, writing one event
//! per line to stdout. Everything else (the ledger, people) is the parent's job.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use headroom_core::protocol::{Event, Job};

pub fn run() -> ExitCode {
    // tch's infallible ops panic on libtorch errors; the step loop catches them, so keep the
    // default hook from printing them as crashes.
    std::panic::set_hook(Box::new(|_| {}));
    // Each line is written under stdout's lock, so the heartbeat thread's lines never split an
    // event's.
    let send = |e: &Event| {
        let mut out = std::io::stdout().lock();
        // A parent that went away cannot be told anything; stop quietly.
        if writeln!(out, "{}", e.to_line())
            .and_then(|()| out.flush())
            .is_err()
        {
            std::process::exit(141);
        }
    };
    std::thread::spawn(move || loop {
        std::thread::sleep(headroom_core::protocol::HEARTBEAT);
        send(&Event::Heartbeat);
    });
    let mut emit = |e: Event| send(&e);
    let mut line = String::new();
    if let Err(e) = std::io::stdin().lock().read_line(&mut line) {
        emit(Event::Error {
            code: "bad_request".into(),
            message: format!("cannot read the request: {e}"),
        });
        return ExitCode::from(2);
    }
    let job = match Job::from_line(&line) {
        Ok(j) => j,
        Err(e) => {
            emit(Event::Error {
                code: "bad_request".into(),
                message: e.to_string(),
            });
            return ExitCode::from(2);
        }
    };
    let result = match &job {
        Job::Sweep(req) => headroom_torch::sweep::run_sweep(req, &mut emit),
        Job::Epochs(req) => headroom_torch::epochs::run_epochs(req, &mut emit),
        Job::Profile(req) => headroom_torch::profile::run_profile(req, &mut emit),
    };
    match result {
        Ok(()) => {
            // Everything is said (every event was flushed as it was written). Skip the teardown:
            // dropping the model, libtorch's static destructors and, on a GPU, the allocator's
            // cache take a few hundred milliseconds the parent would spend waiting for the exit.
            // SAFETY: `_exit` ends the process at once; no Rust state is observed after it.
            unsafe { libc::_exit(0) }
        }
        Err(e) => {
            emit(Event::Error {
                code: e.code().into(),
                message: e.to_string(),
            });
            ExitCode::from(2)
        }
    }
}

/// `headroom worker --doctor`: one JSON line describing Headroom's libtorch and its devices.
pub fn run_doctor() -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    let facts = super::doctor::libtorch_facts();
    match serde_json::to_string(&facts) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("headroom worker: cannot encode the report: {e}");
            ExitCode::from(2)
        }
    }
}
