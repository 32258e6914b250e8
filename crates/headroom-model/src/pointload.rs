//! What the rest of the machine did while a point was timed, as data: the other processes'
//! CPU, the OS's memory pressure, swap growth and the other users of the accelerator, with the
//! warnings they give a point. `load` reads them; the worker's protocol and a sweep's summary
//! carry them.

use serde::{Deserialize, Serialize};

/// The OS's own judgement of memory pressure.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pressure {
    Normal,
    Warn,
    Critical,
}

/// Another process on the accelerator a point ran on.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccelUser {
    /// Its pid as the tool reported it (`None` when only a count could be told).
    pub pid: Option<u32>,
    pub name: String,
    /// Device memory it held (NVIDIA).
    pub bytes: Option<u64>,
    /// The share of readings in which it was the last to submit GPU work (Apple GPUs).
    pub share: Option<f64>,
}

/// What the rest of the machine did while a point was timed.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointLoad {
    /// Cores' worth of CPU the other processes used on average (1.0: one core all the time).
    pub other_cores: f64,
    /// The busiest other process, by name, and its cores.
    pub busiest: Option<String>,
    pub busiest_cores: f64,
    /// Seconds the reading spans.
    pub seconds: f64,
    /// The OS's memory pressure, the worse of the point's start and end, with its figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<Pressure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure_detail: Option<String>,
    /// How much swap grew while the point was timed (bytes; negative: it shrank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_growth_bytes: Option<i64>,
    /// Other processes on the accelerator the point ran on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accel_others: Vec<AccelUser>,
}

/// Other processes using this many cores while a point is timed make its figure suspect.
pub const LOAD_WARN_CORES: f64 = 0.5;
/// Swap growing by this much while a point is timed means the machine was paging.
pub const SWAP_WARN_BYTES: i64 = 64 << 20;
/// Another process last to submit GPU work in this share of readings was using the GPU.
pub const ACCEL_WARN_SHARE: f64 = 0.25;

impl PointLoad {
    /// The warnings for a point timed beside other work, one per cause that mattered.
    pub fn warnings(&self, batch: u32) -> Vec<String> {
        self.warnings_for(&format!("batch {batch}"))
    }

    /// What disturbed the timing, in a few words (the first cause that mattered), or `None`
    /// when it was quiet: what a pair of runs judged on the figures must say instead of a
    /// verdict.
    pub fn disturbance(&self) -> Option<String> {
        if self.other_cores >= LOAD_WARN_CORES {
            let who = self.busiest.as_ref().map_or_else(String::new, |b| {
                format!(", {b} {:.1} of them", self.busiest_cores)
            });
            return Some(format!(
                "other processes used {:.1} cores{who}",
                self.other_cores
            ));
        }
        if let Some(p @ (Pressure::Warn | Pressure::Critical)) = self.pressure {
            return Some(format!(
                "the OS was under {} memory pressure",
                if p == Pressure::Warn {
                    "warning"
                } else {
                    "critical"
                }
            ));
        }
        if let Some(g) = self.swap_growth_bytes.filter(|g| *g >= SWAP_WARN_BYTES) {
            return Some(format!(
                "swap grew by {}",
                crate::budget::format_bytes(g.unsigned_abs())
            ));
        }
        self.accel_others
            .iter()
            .find(|u| u.share.is_none_or(|s| s >= ACCEL_WARN_SHARE))
            .map(|u| format!("{} shared the accelerator", u.name))
    }

    /// [`PointLoad::warnings`] for what was timed, named (`batch 64`, `run 12`).
    pub fn warnings_for(&self, what: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.other_cores >= LOAD_WARN_CORES {
            let who = self.busiest.as_ref().map_or_else(String::new, |b| {
                format!("{b} used {:.1} cores, ", self.busiest_cores)
            });
            out.push(format!(
                "{what} was timed while {who}other processes {:.1} cores in all: its throughput may read low; measure again when the machine is quieter",
                self.other_cores
            ));
        }
        if let Some(p @ (Pressure::Warn | Pressure::Critical)) = self.pressure {
            out.push(format!(
                "{what} was timed under {} memory pressure ({}): the OS was short of memory, so its throughput and peak may not hold on a quieter machine; close memory-heavy apps and measure again",
                if p == Pressure::Warn { "warning" } else { "critical" },
                self.pressure_detail.as_deref().unwrap_or("the OS's own level")
            ));
        }
        if let Some(g) = self.swap_growth_bytes.filter(|g| *g >= SWAP_WARN_BYTES) {
            out.push(format!(
                "{what} was timed while swap grew by {}: the machine was paging; its throughput may read low",
                crate::budget::format_bytes(g.unsigned_abs())
            ));
        }
        let shared: Vec<String> = self
            .accel_others
            .iter()
            .filter(|u| u.share.is_none_or(|s| s >= ACCEL_WARN_SHARE))
            .map(|u| {
                let pid = u.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                match (u.bytes, u.share) {
                    (Some(b), _) => {
                        format!("{}{pid} holding {}", u.name, crate::budget::format_bytes(b))
                    }
                    (None, Some(s)) => format!(
                        "{}{pid} submitting work in {:.0} % of readings",
                        u.name,
                        s * 100.0
                    ),
                    (None, None) => format!("{}{pid}", u.name),
                }
            })
            .collect();
        if !shared.is_empty() {
            out.push(format!(
                "{what} ran on an accelerator shared with {}: its throughput and memory head-room may read low",
                shared.join(", ")
            ));
        }
        out
    }
}
