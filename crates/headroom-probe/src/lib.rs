//! Headroom reading this machine: child processes and the command-line tools it asks
//! (`tool_stdout`), system memory, the machine's facts, mounts, how busy the GPU is, the other
//! load a measurement ran beside, memory contention (which apps hold memory, pressure), and
//! readiness (is PyTorch's MPS backend, CUDA or MLX ready here) with its macOS and Linux parsers.
//! Each reader is a thin layer over a pure parser tested on captured outputs; nothing here writes
//! Headroom's own files.

pub mod child;
pub mod conditions;
#[cfg(target_os = "macos")]
pub mod conditions_macos;
pub mod contention;
pub mod gpu_busy;
pub mod load;
pub mod machine;
pub mod mounts;
pub mod readiness;
pub mod sysmem;
