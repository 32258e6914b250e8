//! Linux facts doctor reads: `/etc/os-release`, the power supplies, thermal zones and CPU
//! frequency governor under `/sys`, `nvidia-smi`'s CSV, and the architecture in an ELF header.
//! The readers take the root they read under, so tests can point them at a copy of a tree.

use std::path::Path;

use super::{BatteryFacts, GpuFacts, PowerSource};

/// `PRETTY_NAME` (else `NAME VERSION_ID`) of `/etc/os-release` text.
pub fn parse_os_release(text: &str) -> Option<String> {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let v = l.strip_prefix(key)?.strip_prefix('=')?;
            Some(v.trim().trim_matches('"').to_owned())
        })
    };
    get("PRETTY_NAME").or_else(|| match (get("NAME"), get("VERSION_ID")) {
        (Some(n), Some(v)) => Some(format!("{n} {v}")),
        (n, _) => n,
    })
}

/// The architecture named by an ELF header (`x86_64`, `aarch64`, …); `None` when `bytes` is not
/// ELF. Reads `e_machine`, in the byte order `EI_DATA` gives.
pub fn elf_arch(bytes: &[u8]) -> Option<&'static str> {
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return None;
    }
    let raw = [bytes[18], bytes[19]];
    let machine = match bytes[5] {
        1 => u16::from_le_bytes(raw),
        2 => u16::from_be_bytes(raw),
        _ => return None,
    };
    Some(match machine {
        0x03 => "i386",
        0x28 => "arm",
        0x3E => "x86_64",
        0xB7 => "aarch64",
        0xF3 => "riscv64",
        0x15 => "ppc64",
        0x16 => "s390x",
        _ => "unknown",
    })
}

/// Power source and battery from a `/sys/class/power_supply` tree under `root`: `Mains` supplies
/// that are `online`, and the first `Battery` with its `capacity` and `status`. `None` when the
/// tree exposes no supply at all (most servers and VMs).
pub fn read_power_supply(root: &Path) -> Option<(PowerSource, Option<BatteryFacts>)> {
    let dir = root.join("sys/class/power_supply");
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    if entries.is_empty() {
        return None;
    }
    let read = |p: &Path, f: &str| {
        std::fs::read_to_string(p.join(f))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    let mut mains_online = None;
    let mut battery = None;
    for e in &entries {
        match read(e, "type").as_deref() {
            Some("Mains" | "USB") => {
                let online = read(e, "online").as_deref() == Some("1");
                mains_online = Some(mains_online.unwrap_or(false) || online);
            }
            Some("Battery") if battery.is_none() => {
                battery = Some(BatteryFacts {
                    percent: read(e, "capacity").and_then(|c| c.parse().ok()),
                    state: read(e, "status").map(|s| s.to_lowercase()),
                    remaining: None,
                });
            }
            _ => {}
        }
    }
    let discharging = battery
        .as_ref()
        .and_then(|b| b.state.as_deref())
        .is_some_and(|s| s == "discharging");
    let source = match (mains_online, discharging) {
        (_, true) | (Some(false), _) if battery.is_some() => PowerSource::Battery,
        (Some(true), _) => PowerSource::Ac,
        _ => PowerSource::Unknown,
    };
    Some((source, battery))
}

/// One thermal zone's reading.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThermalZone {
    pub name: String,
    pub celsius: f64,
    /// The lowest `passive` or `critical` trip point, where the kernel starts throttling.
    pub trip_celsius: Option<f64>,
}

/// The thermal zones under `root/sys/class/thermal` with their temperature and lowest trip point.
pub fn read_thermal_zones(root: &Path) -> Vec<ThermalZone> {
    let Ok(dir) = std::fs::read_dir(root.join("sys/class/thermal")) else {
        return Vec::new();
    };
    let mut zones: Vec<_> = dir
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("thermal_zone"))
        })
        .collect();
    zones.sort();
    zones
        .iter()
        .filter_map(|z| {
            let milli: f64 = std::fs::read_to_string(z.join("temp"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            let name = std::fs::read_to_string(z.join("type"))
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "zone".into());
            let mut trip: Option<f64> = None;
            for i in 0..16 {
                let Ok(kind) = std::fs::read_to_string(z.join(format!("trip_point_{i}_type")))
                else {
                    break;
                };
                if !matches!(kind.trim(), "passive" | "critical" | "hot") {
                    continue;
                }
                let t = std::fs::read_to_string(z.join(format!("trip_point_{i}_temp")))
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok());
                if let Some(t) = t.filter(|t| *t > 0.0) {
                    trip = Some(trip.map_or(t, |x| x.min(t)));
                }
            }
            Some(ThermalZone {
                name,
                celsius: milli / 1000.0,
                trip_celsius: trip.map(|t| t / 1000.0),
            })
        })
        .collect()
}

/// The frequency governor of CPU 0 (`powersave` skews every CPU figure), if cpufreq is exposed.
pub fn read_cpu_governor(root: &Path) -> Option<String> {
    std::fs::read_to_string(root.join("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The GPUs of `nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader,nounits`
/// (memory in MiB).
pub fn parse_nvidia_smi_csv(text: &str) -> Vec<GpuFacts> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.split(',').map(str::trim);
            let name = f.next()?.to_owned();
            if name.is_empty() || name.starts_with("NVIDIA-SMI has failed") {
                return None;
            }
            let mib: Option<u64> = f.next().and_then(|m| m.parse().ok());
            let driver = f.next().map(ToOwned::to_owned).filter(|d| !d.is_empty());
            Some(GpuFacts {
                name,
                cores: None,
                memory_bytes: mib.and_then(|m| m.checked_mul(1024 * 1024)),
                driver,
                source: "nvidia-smi".into(),
            })
        })
        .collect()
}
