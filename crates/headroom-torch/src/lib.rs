//! The only crate that links libtorch (through `tch`): devices, built-in workloads, TorchScript
//! models, the measured step loop and the accelerator allocator statistics (a small C++ shim).
//! It knows nothing of the ledger, the CLI or Tauri: it turns a [`SweepRequest`] into protocol
//! events (`headroom_model::protocol::Event`) handed to a callback.
//!
//! [`SweepRequest`]: headroom_model::protocol::SweepRequest

use headroom_model::error::ErrorCode;

pub mod alloc;
pub mod device;
pub mod epochs;
pub mod measure;
pub mod numerics;
pub mod profile;
pub mod serve;
pub mod sweep;
pub mod workloads;

/// Errors of the libtorch side. Each message says what was wrong and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TorchError {
    /// A call into the allocator shim failed.
    #[error("{what}: {message}")]
    Allocator { what: String, message: String },
    /// The request cannot run as given (unknown workload, bad shape, absent device...).
    #[error("{message}")]
    BadRequest { code: ErrorCode, message: String },
    /// libtorch raised an error (said without libtorch's C++ backtrace).
    #[error("libtorch: {}", without_backtrace(&.0.to_string()))]
    Torch(#[from] tch::TchError),
}

/// libtorch's message without the C++ stack it appends (`Exception raised from … (most recent
/// call first):` and thirty `frame #N:` lines): what failed, not where in libtorch.
pub fn without_backtrace(message: &str) -> &str {
    // Also as a panic's `{:?}` writes it, its newlines escaped.
    let cut = [
        "\nException raised from",
        "\nframe #",
        "\\nException raised from",
        "\\nframe #",
    ]
    .iter()
    .filter_map(|m| message.find(m))
    .min()
    .unwrap_or(message.len());
    message[..cut].trim_end()
}

impl TorchError {
    /// A stable code for programs: `bad_device`, `bad_workload`, `bad_shape`, `bad_model`, `torch`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Allocator { .. } => ErrorCode::Allocator,
            Self::BadRequest { code, .. } => *code,
            Self::Torch(_) => ErrorCode::Torch,
        }
    }

    pub(crate) fn bad(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::BadRequest {
            code,
            message: message.into(),
        }
    }
}

/// Sets libtorch's intra-op thread count for a job. More threads than the machine has cores
/// is refused: libtorch would start them all (`--threads 100000` spent minutes making threads
/// while the sweep only sent heartbeats), and oversubscribed cores only measure contention.
pub(crate) fn set_threads(threads: Option<u32>) -> Result<(), TorchError> {
    let Some(t) = threads else {
        return Ok(());
    };
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if t == 0 || usize::try_from(t).map_or(true, |t| t > cores) {
        return Err(TorchError::bad(
            ErrorCode::BadRequest,
            format!(
                "--threads {t} cannot run here: this machine has {cores} core(s); give 1 to {cores}"
            ),
        ));
    }
    tch::set_num_threads(i32::try_from(t).unwrap_or(1));
    Ok(())
}

/// The thread count a job on `dev` runs with: `threads` when given (checked), else on the CPU the
/// cores other processes leave free ([`free_core_threads`]), said in a warning.
pub(crate) fn fit_threads(
    threads: Option<u32>,
    dev: tch::Device,
    emit: &mut dyn FnMut(headroom_model::protocol::Event),
) -> Result<(), TorchError> {
    set_threads(threads)?;
    if threads.is_some() || dev != tch::Device::Cpu {
        return Ok(());
    }
    if let Some((t, why)) = free_core_threads() {
        tch::set_num_threads(i32::try_from(t).unwrap_or(1));
        emit(headroom_model::protocol::Event::Warning { message: why });
    }
    Ok(())
}

/// With no `--threads` on the CPU: as many libtorch threads as the cores other processes leave
/// free, read over a moment before the first point (a thread waiting for a core another process
/// holds stalls every step of an intra-op parallel kernel: one busy core made a 2-thread sweep
/// 4–8× slower). `None` when every core is free; else the count and why, for a warning.
pub(crate) fn free_core_threads() -> Option<(u32, String)> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cores <= 1 {
        return None;
    }
    let mut load = headroom_probe::load::OtherLoad::new();
    load.start();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let r = load.read(&[])?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let busy = (r.other_cores.round().max(0.0) as usize).min(cores - 1);
    if busy == 0 {
        return None;
    }
    let threads = u32::try_from(cores - busy).unwrap_or(1);
    let who = r.busiest.as_ref().map_or_else(String::new, |b| {
        format!(", {b} {:.1} of them", r.busiest_cores)
    });
    Some((
        threads,
        format!(
            "other processes were using {:.1} of this machine's {cores} cores{who}: libtorch runs {threads} thread(s) on the cores left (--threads N sets it)",
            r.other_cores
        ),
    ))
}

/// The `hello` a worker sends once its workload is built: who it is and what it runs.
pub(crate) fn hello(
    info: &device::DeviceInfo,
    workload: String,
    input_shape: Vec<i64>,
    parameters: u64,
    budget_bytes: u64,
) -> headroom_model::protocol::Hello {
    headroom_model::protocol::Hello {
        protocol: headroom_model::protocol::PROTOCOL_VERSION,
        headroom_version: env!("CARGO_PKG_VERSION").to_owned(),
        libtorch: alloc::libtorch_version(),
        device: info.label.clone(),
        device_name: info.name.clone(),
        capacity_bytes: info.capacity,
        available_bytes: info.available,
        budget_bytes,
        threads: u32::try_from(tch::get_num_threads()).unwrap_or(0),
        workload,
        input_shape,
        parameters,
        pid: std::process::id(),
    }
}

#[cfg(test)]
mod backtrace_tests {
    #[test]
    fn libtorch_messages_lose_their_cpp_stack_raw_or_escaped() {
        let raw = "[enforce fail at alloc_cpu.cpp:127] can't allocate memory\nframe #0: c10::x + 0x6a\nframe #1: y";
        assert_eq!(
            super::without_backtrace(raw),
            "[enforce fail at alloc_cpu.cpp:127] can't allocate memory"
        );
        let escaped = r#"Torch("shape '[1, 2]' is invalid\nException raised from f at g.cpp:1 (most recent call first):\nframe #0: h")"#;
        assert_eq!(
            super::without_backtrace(escaped),
            r#"Torch("shape '[1, 2]' is invalid"#
        );
        assert_eq!(super::without_backtrace("plain"), "plain");
    }
}
