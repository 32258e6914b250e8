//! What a run records of its surroundings: the mount its data lives on, the torch installed in
//! the Python it would run with, its memory readings, the round trips to its artifact store. The
//! types only; headroom-probe and headroom-core read them.

use serde::{Deserialize, Serialize};

/// What kind of storage a mount is.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MountClass {
    Local,
    Network,
    External,
    Unknown,
}

/// The mount a path lives on.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountFacts {
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
    pub class: MountClass,
}

/// The torch installed in the Python a researcher would run their script with, read from its
/// package metadata (no `import torch`, so it answers in tens of milliseconds).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonTorch {
    pub python: String,
    /// `None`: that Python has no torch installed.
    pub torch: Option<String>,
}

/// One memory reading of a watched process.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MemoryReading {
    /// Seconds since watching began.
    pub t: f64,
    /// The process's own resident (Linux) or footprint (macOS) bytes.
    pub process_bytes: u64,
    /// The sum over the process and its descendants.
    pub tree_bytes: u64,
    /// The tree's proportional set size (shared pages split, Linux), when readable.
    pub tree_pss_bytes: Option<u64>,
    pub processes: u32,
    /// The descendants' own memory (PSS where the OS gives it, so pages shared with the
    /// parent after a fork count once; else resident bytes): DataLoader workers, mostly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub children_bytes: Option<u64>,
}

/// Round trips to an artifact store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactRtt {
    /// As the user named it.
    pub target: String,
    /// The host the connections were made from (a remote profile's name, or this machine's).
    pub from: String,
    /// Each successful connect, in milliseconds.
    pub samples_ms: Vec<f64>,
    pub median_ms: Option<f64>,
    /// Why no round trip was measured (unreachable, refused, timed out, not resolvable).
    pub error: Option<String>,
}

impl ArtifactRtt {
    /// One line for a report: "12.3 ms to s3.example.com:443 from gpu-mac (5 connects)".
    pub fn describe(&self) -> String {
        match (self.median_ms, &self.error) {
            (Some(m), _) => format!(
                "{m:.1} ms to {} from {} (median of {} connects)",
                self.target,
                self.from,
                self.samples_ms.len()
            ),
            (None, Some(e)) => format!("{} from {}: unknown ({e})", self.target, self.from),
            (None, None) => format!("{} from {}: unknown", self.target, self.from),
        }
    }
}
