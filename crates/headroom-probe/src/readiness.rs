//! Readiness (`headroom doctor`): the facts about this machine, every Python environment found
//! and Headroom's own libtorch, and the traffic light per backend that those facts give.
//!
//! Facts come from pure parsers ([`macos`], [`linux`]) fed by a thin layer ([`system`]) and
//! from running each interpreter ([`python`]); [`verdict`] turns facts into lights and is pure.

pub mod isolation;
pub mod linux;
pub mod macos;
pub mod python;
pub mod system;
pub mod verdict;

use serde::{Deserialize, Serialize};

pub use python::{PythonFacts, PythonReport, TorchFacts};
pub use verdict::{lights, Light, LightState};

/// A GPU the OS reports.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuFacts {
    pub name: String,
    /// GPU cores (Apple Silicon reports them).
    pub cores: Option<u32>,
    pub memory_bytes: Option<u64>,
    pub driver: Option<String>,
    /// Which command or file said so.
    pub source: String,
}

/// The machine.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFacts {
    /// `linux` or `macos`.
    pub os: String,
    pub os_name: Option<String>,
    pub os_version: Option<String>,
    pub kernel: Option<String>,
    pub cpu: Option<String>,
    pub cpu_cores: Option<u32>,
    /// The hardware's architecture (`arm64` on Apple Silicon even when this process is translated).
    pub arch: String,
    /// The architecture this `headroom` binary was built for.
    pub process_arch: String,
    pub apple_silicon: bool,
    /// This process runs under Rosetta (macOS `sysctl.proc_translated`); `None` where there is no
    /// such thing (Linux, Intel Macs).
    pub translated: Option<bool>,
    pub memory_total_bytes: Option<u64>,
    pub gpus: Vec<GpuFacts>,
    /// Running inside the macOS App Sandbox, which hides other environments' files.
    pub sandboxed: bool,
    /// Linux: the container or VM this runs in (none found: `None`).
    #[serde(default)]
    pub isolation: Option<isolation::Isolation>,
}

/// Where power comes from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerSource {
    Ac,
    Battery,
    Ups,
    Unknown,
}

/// The internal battery.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatteryFacts {
    pub percent: Option<u32>,
    /// `charging`, `discharging`, `AC attached; not charging`, …
    pub state: Option<String>,
    /// Time left as the OS estimates it (`3:06`).
    pub remaining: Option<String>,
}

/// Conditions that skew measurements.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conditions {
    /// `None` when the OS exposes no power supply (servers, VMs).
    pub power_source: Option<PowerSource>,
    pub battery: Option<BatteryFacts>,
    /// `None` when the OS does not say.
    pub low_power_mode: Option<bool>,
    /// Whether the OS exposes any thermal state at all.
    pub thermal_exposed: bool,
    /// Recorded thermal or performance warnings (throttling).
    pub thermal_warnings: Vec<String>,
    /// Linux cpufreq governor of CPU 0.
    pub cpu_governor: Option<String>,
}

/// One device Headroom's libtorch tried.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceCheck {
    pub device: String,
    pub name: String,
    pub memory_total_bytes: u64,
    pub matmul_ok: bool,
    pub matmul_ms: Option<f64>,
    /// Where the result tensor lives (proves the GPU ran it, not the CPU).
    pub result_device: Option<String>,
    pub error: Option<String>,
}

/// Headroom's own libtorch, as its worker reports it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibtorchFacts {
    pub version: String,
    pub cuda_devices: i64,
    pub has_mps: bool,
    pub threads: i32,
    pub devices: Vec<DeviceCheck>,
}

/// Everything doctor found, and its verdict.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub machine: MachineFacts,
    pub conditions: Conditions,
    pub libtorch: Option<LibtorchFacts>,
    /// Why Headroom's libtorch could not be asked (its worker crashed or hung).
    pub libtorch_error: Option<String>,
    pub pythons: Vec<PythonReport>,
    /// Index into `pythons` of the interpreter the lights judge.
    pub primary: Option<usize>,
    pub lights: Vec<Light>,
    /// Facts worth a line that are not a light (version drift, …).
    pub notes: Vec<String>,
}

impl Report {
    /// What a readiness check found that a decision rests on, without its timings and
    /// wording: the machine, each Python with its torch (version, CUDA, MPS built and
    /// available) and MLX, Headroom's libtorch and its devices, each light's state, the power
    /// source, Low Power Mode and whether anything throttles. Two checks with the same say the
    /// same; the battery's percentage and a matmul's milliseconds are left out.
    pub fn what_matters(&self) -> serde_json::Value {
        let pythons: Vec<serde_json::Value> = self
            .pythons
            .iter()
            .map(|p| {
                let f = p.facts.as_ref();
                let torch = f.and_then(|f| f.torch.as_ref());
                serde_json::json!({
                    "path": p.path,
                    "status": p.status,
                    "archs": p.binary_archs,
                    "version": f.map(|f| &f.version),
                    "machine": f.map(|f| &f.machine),
                    "torch": torch.map(|t| serde_json::json!({
                        "version": t.version,
                        "cuda": t.cuda_version,
                        "mps_built": t.mps_built,
                        "mps_available": t.mps_available,
                        "cuda_available": t.cuda_available,
                        "cuda_devices": t.cuda_devices,
                        "matmul_failed": t.matmul_error.is_some(),
                    })),
                    "torch_error": f.is_some_and(|f| f.torch_error.is_some()),
                    "mlx": f.and_then(|f| f.mlx.as_ref()).map(|m| (&m.version, &m.default_device)),
                })
            })
            .collect();
        let libtorch = self.libtorch.as_ref().map(|l| {
            let devices: Vec<(&str, bool)> = l
                .devices
                .iter()
                .map(|d| (d.device.as_str(), d.matmul_ok))
                .collect();
            serde_json::json!({"version": l.version, "cuda_devices": l.cuda_devices,
                               "has_mps": l.has_mps, "devices": devices})
        });
        let lights: Vec<(&str, LightState)> = self
            .lights
            .iter()
            .map(|l| (l.backend.as_str(), l.state))
            .collect();
        let m = &self.machine;
        serde_json::json!({
            "machine": [&m.os, &m.arch, &m.process_arch],
            "os_version": m.os_version,
            "translated": m.translated,
            "memory": m.memory_total_bytes,
            "gpus": m.gpus.iter().map(|g| &g.name).collect::<Vec<_>>(),
            "pythons": pythons,
            "primary": self.primary,
            "libtorch": libtorch,
            "libtorch_failed": self.libtorch_error.is_some(),
            "lights": lights,
            "power": self.conditions.power_source,
            "low_power": self.conditions.low_power_mode,
            "throttled": !self.conditions.thermal_warnings.is_empty(),
        })
    }

    /// Assembles a report and its verdict from the facts.
    pub fn new(
        machine: MachineFacts,
        conditions: Conditions,
        libtorch: Result<LibtorchFacts, String>,
        pythons: Vec<PythonReport>,
    ) -> Self {
        let (libtorch, libtorch_error) = match libtorch {
            Ok(l) => (Some(l), None),
            Err(e) => (None, Some(e)),
        };
        // The interpreter named by --python or the active environment, when it ran; else the
        // first with torch; else the first that ran at all.
        let ran = |p: &PythonReport| p.facts.is_some();
        let primary = pythons
            .iter()
            .position(|p| p.explicit && ran(p))
            .or_else(|| {
                pythons
                    .iter()
                    .position(|p| p.facts.as_ref().is_some_and(|f| f.torch.is_some()))
            })
            .or_else(|| pythons.iter().position(ran));
        let mut r = Self {
            machine,
            conditions,
            libtorch,
            libtorch_error,
            pythons,
            primary,
            lights: Vec::new(),
            notes: Vec::new(),
        };
        r.lights = verdict::lights(&r);
        r.notes = verdict::notes(&r);
        r
    }

    /// The interpreter the lights judge.
    pub fn primary_python(&self) -> Option<&PythonReport> {
        self.primary.and_then(|i| self.pythons.get(i))
    }

    /// Whether any light is red.
    pub fn any_red(&self) -> bool {
        self.lights.iter().any(|l| l.state == LightState::Red)
    }
}
