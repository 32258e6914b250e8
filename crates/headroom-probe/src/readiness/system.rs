//! The thin layer that reads this machine: files under /proc and /sys on Linux, and on macOS the
//! commands whose outputs [`super::macos`] parses. Nothing here decides anything.

use std::path::Path;

#[cfg(target_os = "linux")]
use super::linux;
#[cfg(target_os = "macos")]
use super::macos;
use super::{Conditions, MachineFacts, PowerSource};

/// An OS tool's stdout and stderr (`sysctl` reports unknown OIDs on stderr), within a limit.
#[cfg(target_os = "macos")]
use crate::child::tool_text as run;

/// The architectures an executable's binary holds (following links): on Linux from its ELF
/// header, on macOS from `lipo -archs` (or `file` where lipo is missing).
pub fn binary_archs(path: &Path) -> Vec<String> {
    let Ok(real) = path.canonicalize() else {
        return Vec::new();
    };
    #[cfg(target_os = "macos")]
    {
        let p = real.to_string_lossy().into_owned();
        let p = p.as_str();
        if let Some(text) = run("/usr/bin/lipo", &["-archs", p]) {
            let a = macos::parse_lipo_archs(&text);
            if !a.is_empty() {
                return a;
            }
        }
        run("/usr/bin/file", &[p])
            .map(|t| macos::parse_file_archs(&t, Some(p)))
            .unwrap_or_default()
    }
    #[cfg(not(target_os = "macos"))]
    {
        use std::io::Read;
        let mut head = [0u8; 64];
        let n = std::fs::File::open(real)
            .and_then(|mut f| f.read(&mut head))
            .unwrap_or(0);
        super::linux::elf_arch(&head[..n])
            .map(|a| vec![a.to_owned()])
            .unwrap_or_default()
    }
}

/// Facts about the machine.
pub fn machine() -> MachineFacts {
    let mut m = MachineFacts {
        os: std::env::consts::OS.into(),
        os_name: None,
        os_version: None,
        kernel: None,
        cpu: crate::machine::cpu_brand(),
        cpu_cores: std::thread::available_parallelism()
            .ok()
            .and_then(|n| u32::try_from(n.get()).ok()),
        arch: std::env::consts::ARCH.into(),
        process_arch: std::env::consts::ARCH.into(),
        apple_silicon: false,
        translated: None,
        memory_total_bytes: crate::sysmem::system_memory().map(|s| s.total),
        gpus: Vec::new(),
        sandboxed: std::env::var_os("APP_SANDBOX_CONTAINER_ID").is_some(),
        isolation: None,
    };
    #[cfg(target_os = "linux")]
    {
        m.os_name = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| linux::parse_os_release(&t));
        m.kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_owned());
        m.gpus = nvidia_gpus();
        let iso = super::isolation::read(std::path::Path::new("/"));
        m.isolation = (!iso.is_none() || !iso.shared_folders.is_empty()).then_some(iso);
    }
    #[cfg(target_os = "macos")]
    {
        let sw_vers = run("/usr/bin/sw_vers", &[]);
        let sysctl = run(
            "/usr/sbin/sysctl",
            &["hw.memsize", "hw.optional.arm64", "kern.osrelease"],
        );
        let translated = run("/usr/sbin/sysctl", &["sysctl.proc_translated"]);
        let profiler = run(
            "/usr/sbin/system_profiler",
            &["SPDisplaysDataType", "-json"],
        );
        macos::apply_machine_outputs(
            &mut m,
            macos::MachineOutputs {
                sw_vers: sw_vers.as_deref(),
                sysctl: sysctl.as_deref(),
                proc_translated: translated.as_deref(),
                system_profiler_json: profiler.as_deref(),
            },
        );
    }
    m
}

/// NVIDIA GPUs through NVML (the driver's library, no child process), else `nvidia-smi`, else
/// the driver's /proc files.
#[cfg(target_os = "linux")]
fn nvidia_gpus() -> Vec<super::GpuFacts> {
    let nvml = nvml_wrapper::Nvml::init().ok().map(|nvml| {
        let driver = nvml.sys_driver_version().ok();
        (0..nvml.device_count().unwrap_or(0))
            .filter_map(|i| {
                let d = nvml.device_by_index(i).ok()?;
                Some(super::GpuFacts {
                    name: d.name().ok()?,
                    cores: None,
                    memory_bytes: d.memory_info().ok().map(|m| m.total),
                    driver: driver.clone(),
                    source: "nvml".into(),
                })
            })
            .collect::<Vec<_>>()
    });
    if let Some(gpus) = nvml.filter(|g| !g.is_empty()) {
        return gpus;
    }
    let smi = std::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=name,memory.total,driver_version",
            "--format=csv,noheader,nounits",
        ])
        .output();
    if let Ok(out) = smi {
        let gpus = linux::parse_nvidia_smi_csv(&String::from_utf8_lossy(&out.stdout));
        if out.status.success() && !gpus.is_empty() {
            return gpus;
        }
    }
    (0..16)
        .map_while(crate::machine::nvidia_gpu_name)
        .map(|name| super::GpuFacts {
            name,
            cores: None,
            memory_bytes: None,
            driver: None,
            source: "/proc/driver/nvidia".into(),
        })
        .collect()
}

/// What may skew measurements now: power source, Low Power Mode, thermal state.
pub fn conditions() -> Conditions {
    // From the platform's APIs (no `pmset`): IOKit's power sources, the time-remaining
    // estimate for mains on a desktop, and NSProcessInfo's Low Power Mode and thermal state.
    #[cfg(target_os = "macos")]
    let mut c = {
        let info = objc2_foundation::NSProcessInfo::processInfo();
        macos::conditions_from_platform(
            &crate::conditions_macos::power_sources(),
            Some(crate::conditions_macos::on_mains()),
            Some(info.isLowPowerModeEnabled()),
            Some(info.thermalState().0),
        )
    };
    #[cfg(not(target_os = "macos"))]
    let mut c = Conditions::default();
    #[cfg(target_os = "linux")]
    {
        // HEADROOM_SYS_ROOT: read sysfs from another root (a container's bind mount, a captured
        // tree); `/` otherwise.
        let sys_root = std::env::var_os("HEADROOM_SYS_ROOT").map(std::path::PathBuf::from);
        let root = sys_root.as_deref().unwrap_or(Path::new("/"));
        if let Some((source, battery)) = linux::read_power_supply(root) {
            c.power_source = Some(source);
            c.battery = battery;
        }
        let zones = linux::read_thermal_zones(root);
        c.thermal_exposed = !zones.is_empty();
        for z in &zones {
            if let Some(trip) = z.trip_celsius {
                if z.celsius >= trip - 5.0 {
                    c.thermal_warnings.push(format!(
                        "{} at {:.0} °C, near its {:.0} °C trip point",
                        z.name, z.celsius, trip
                    ));
                }
            }
        }
        c.cpu_governor = linux::read_cpu_governor(root);
        c.low_power_mode = std::fs::read_to_string("/sys/firmware/acpi/platform_profile")
            .ok()
            .map(|p| p.trim() == "low-power");
    }
    if c.power_source == Some(PowerSource::Unknown) && c.battery.is_none() {
        c.power_source = None;
    }
    c
}
