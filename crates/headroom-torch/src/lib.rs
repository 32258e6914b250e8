//! The only crate that links libtorch (through `tch`): devices, built-in workloads, TorchScript
//! models, the measured step loop and the accelerator allocator statistics (a small C++ shim).
//! It knows nothing of the ledger, the CLI or Tauri: it turns a [`SweepRequest`] into protocol
//! events (`headroom_core::protocol::Event`) handed to a callback.
//!
//! [`SweepRequest`]: headroom_core::protocol::SweepRequest

pub mod alloc;
pub mod device;
pub mod epochs;
pub mod measure;
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
    BadRequest { code: &'static str, message: String },
    /// libtorch raised an error.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

impl TorchError {
    /// A stable code for programs: `bad_device`, `bad_workload`, `bad_shape`, `bad_model`, `torch`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Allocator { .. } => "allocator",
            Self::BadRequest { code, .. } => code,
            Self::Torch(_) => "torch",
        }
    }

    pub(crate) fn bad(code: &'static str, message: impl Into<String>) -> Self {
        Self::BadRequest {
            code,
            message: message.into(),
        }
    }
}
