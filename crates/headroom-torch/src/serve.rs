//! What the worker process (`headroom-worker`) does: reads one [`Job`] JSON line on stdin (a sweep, an
//! epochs run or a profile) and runs it, writing one protocol event per line to stdout; or, with
//! `--doctor`, reports this libtorch and a matmul on each of its devices as one JSON line.
//! Everything else (the ledger, people) is the parent's job. It is a binary of its own so that
//! only the process that measures pays for loading libtorch (about 0.4 s of static
//! initialisation); `headroom` itself never links it.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Instant;

use headroom_model::protocol::{Event, Job};
use headroom_probe::readiness::{DeviceCheck, LibtorchFacts};

use crate::{device, measure::guarded, TorchError};

/// Runs the one job read from stdin; exits the process itself once its result is sent.
pub fn run() -> ExitCode {
    // tch's infallible ops panic on libtorch errors; the step loop catches them, so keep the
    // default hook from printing them as crashes. A panic nowhere caught still says what it was:
    // an error event the parent shows, instead of an exit code alone.
    std::panic::set_hook(Box::new(|info| {
        if crate::measure::in_guard() {
            return;
        }
        let what = crate::measure::panic_message(info.payload());
        let at = info
            .location()
            .map(|l| format!(" (at {}:{})", l.file(), l.line()))
            .unwrap_or_default();
        let e = Event::Error {
            code: headroom_model::error::ErrorCode::Internal,
            message: format!("the worker failed: {}{at}", crate::without_backtrace(&what)),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", e.to_line()).and_then(|()| out.flush());
    }));
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
        std::thread::sleep(headroom_model::protocol::HEARTBEAT);
        send(&Event::Heartbeat);
    });
    let mut emit = |e: Event| send(&e);
    let mut line = String::new();
    if let Err(e) = std::io::stdin().lock().read_line(&mut line) {
        emit(Event::Error {
            code: headroom_model::error::ErrorCode::BadRequest,
            message: format!("cannot read the request: {e}"),
        });
        return ExitCode::from(2);
    }
    let job = match Job::from_line(&line) {
        Ok(j) => j,
        Err(e) => {
            emit(Event::Error {
                code: headroom_model::error::ErrorCode::BadRequest,
                message: e.to_string(),
            });
            return ExitCode::from(2);
        }
    };
    let result = match &job {
        Job::Sweep(req) => crate::sweep::run_sweep(req, &mut emit),
        Job::Epochs(req) => crate::epochs::run_epochs(req, &mut emit),
        Job::Profile(req) => crate::profile::run_profile(req, &mut emit),
        Job::Numerics(req) => crate::numerics::run_numerics(req, &mut emit),
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
                code: e.code(),
                message: e.to_string(),
            });
            ExitCode::from(2)
        }
    }
}

/// `headroom-worker --doctor`: one JSON line describing Headroom's libtorch and its devices.
pub fn run_doctor() -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    let facts = libtorch_facts();
    match serde_json::to_string(&facts) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("headroom-worker: cannot encode the report: {e}");
            ExitCode::from(2)
        }
    }
}

/// Headroom's libtorch, as `headroom-worker --doctor` reports it, a matmul on every device it can use.
pub fn libtorch_facts() -> LibtorchFacts {
    let cuda = tch::Cuda::device_count();
    let mps = tch::utils::has_mps();
    let mut specs = vec!["cpu".to_owned()];
    specs.extend((0..cuda).map(|i| format!("cuda:{i}")));
    if mps {
        specs.push("mps".into());
    }
    LibtorchFacts {
        version: crate::alloc::libtorch_version(),
        cuda_devices: cuda,
        has_mps: mps,
        threads: tch::get_num_threads(),
        devices: specs.iter().map(|s| check(s)).collect(),
    }
}

fn check(spec: &str) -> DeviceCheck {
    let mut out = DeviceCheck {
        device: spec.into(),
        name: String::new(),
        memory_total_bytes: 0,
        matmul_ok: false,
        matmul_ms: None,
        result_device: None,
        error: None,
    };
    let r = guarded(|| {
        let dev = device::resolve(spec)?;
        let info = device::info(dev)?;
        out.name = info.name;
        out.memory_total_bytes = info.capacity;
        let opts = (tch::Kind::Float, dev);
        let a = tch::Tensor::f_ones([512, 512], opts)?;
        let b = tch::Tensor::f_ones([512, 512], opts)?;
        let _warm = a.f_matmul(&b)?;
        device::synchronize(dev)?;
        let t = Instant::now();
        let c = a.f_matmul(&b)?;
        device::synchronize(dev)?;
        out.matmul_ms = Some(t.elapsed().as_secs_f64() * 1e3);
        out.result_device = Some(device::label(c.device()));
        // Every element of ones·ones is 512: a wrong answer is a broken device, not a fast one.
        let corner = c.f_double_value(&[0, 0])?;
        if (corner - 512.0).abs() > 1e-3 {
            return Err(TorchError::Torch(tch::TchError::Torch(format!(
                "the matmul returned {corner} instead of 512"
            ))));
        }
        Ok(())
    });
    match r {
        Ok(()) => out.matmul_ok = true,
        Err(e) => out.error = Some(e.to_string()),
    }
    out
}
