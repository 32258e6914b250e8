//! Devices: parsing `auto|cpu|mps|cuda[:N]`, checking they exist, their memory, and waiting for
//! their queued work.

use headroom_model::error::ErrorCode;
use headroom_probe::sysmem;
use tch::Device;

use crate::{alloc, TorchError};

/// A resolved device and what is known of its memory.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub device: Device,
    /// `cpu`, `cuda:0`, `mps`.
    pub label: String,
    pub name: String,
    /// Total memory (RAM for the CPU, device memory for CUDA, the recommended working set for MPS).
    pub capacity: u64,
    /// What a run may use now.
    pub available: u64,
}

/// Resolves `spec` to a present device, or says which devices there are.
pub fn resolve(spec: &str) -> Result<Device, TorchError> {
    let s = spec.trim().to_ascii_lowercase();
    let cuda_count = usize::try_from(tch::Cuda::device_count()).unwrap_or(0);
    let has_mps = tch::utils::has_mps();
    let present = || {
        let mut v = vec!["cpu".to_owned()];
        v.extend((0..cuda_count).map(|i| format!("cuda:{i}")));
        if has_mps {
            v.push("mps".to_owned());
        }
        v.join(", ")
    };
    match s.as_str() {
        "auto" => Ok(if cuda_count > 0 {
            Device::Cuda(0)
        } else if has_mps {
            Device::Mps
        } else {
            Device::Cpu
        }),
        "cpu" => Ok(Device::Cpu),
        "mps" if has_mps => Ok(Device::Mps),
        "mps" => Err(TorchError::bad(
            ErrorCode::BadDevice,
            format!("device mps is not available here (this libtorch has no usable MPS backend); devices present: {}", present()),
        )),
        _ => {
            let idx = match s.strip_prefix("cuda") {
                Some("") => Some(0),
                Some(rest) => rest.strip_prefix(':').and_then(|n| n.parse::<usize>().ok()),
                None => None,
            };
            let Some(i) = idx else {
                return Err(TorchError::bad(
                    ErrorCode::BadDevice,
                    format!("device {spec:?} is not one of auto, cpu, mps, cuda, cuda:N"),
                ));
            };
            if i < cuda_count {
                Ok(Device::Cuda(i))
            } else {
                Err(TorchError::bad(
                    ErrorCode::BadDevice,
                    format!("device {spec} is not there: this machine has {cuda_count} CUDA device(s); devices present: {}; pass --device with one of them", present()),
                ))
            }
        }
    }
}

/// The label people read: `cpu`, `cuda:0`, `mps`.
pub fn label(device: Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(i) => format!("cuda:{i}"),
        Device::Mps => "mps".into(),
        Device::Vulkan => "vulkan".into(),
    }
}

/// The index the allocator shim wants, `None` for the CPU.
pub fn accel_index(device: Device) -> Option<usize> {
    match device {
        Device::Cuda(i) => Some(i),
        Device::Mps => Some(0),
        _ => None,
    }
}

/// Memory and name of `device`.
pub fn info(device: Device) -> Result<DeviceInfo, TorchError> {
    let label = label(device);
    match device {
        Device::Cuda(i) => {
            let (free, total) = alloc::memory_info(i)?;
            let held = alloc::device_stats(i)
                .map(|s| s.reserved_current)
                .unwrap_or(0);
            let name = headroom_probe::machine::nvidia_gpu_name(i)
                .unwrap_or_else(|| format!("CUDA device {i}"));
            Ok(DeviceInfo {
                device,
                label,
                name,
                capacity: total,
                available: free + held,
            })
        }
        Device::Mps => {
            let rec = alloc::mps_recommended_max()?.unwrap_or(0);
            let sys = sysmem::system_memory();
            let avail = sys.map_or(rec, |m| m.available.min(rec));
            let name = headroom_probe::machine::cpu_brand().unwrap_or_else(|| "Apple GPU".into());
            Ok(DeviceInfo {
                device,
                label,
                name: format!("{name} GPU (MPS)"),
                capacity: rec,
                available: avail,
            })
        }
        _ => {
            let sys = sysmem::system_memory().ok_or_else(|| {
                TorchError::bad(ErrorCode::NoMemoryInfo, "cannot read this machine's memory; pass --budget explicitly, e.g. --budget 8GiB")
            })?;
            let own = sysmem::process_memory().map_or(0, |(rss, _)| rss);
            let name = headroom_probe::machine::cpu_brand().unwrap_or_else(|| "CPU".into());
            Ok(DeviceInfo {
                device,
                label,
                name,
                capacity: sys.total,
                available: sys.available + own,
            })
        }
    }
}

/// Waits until all work queued on `device` is done (a no-op on the CPU).
pub fn synchronize(device: Device) -> Result<(), TorchError> {
    match accel_index(device) {
        Some(i) => alloc::synchronize(i),
        None => Ok(()),
    }
}
