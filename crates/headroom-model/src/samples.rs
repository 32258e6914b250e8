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
    /// The most memory the process has held since it started, where the OS keeps it (Linux's
    /// `VmHWM`, macOS's lifetime peak footprint): a peak between two readings (a step's
    /// activations, freed before the next reading) is not missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub process_peak_bytes: Option<u64>,
}

impl MemoryReading {
    /// The tree's peak as far as this reading knows it: its bytes now, or the process's own
    /// high-water mark with its descendants' bytes now, whichever is more.
    pub fn tree_peak_bytes(&self) -> u64 {
        let children = self.tree_bytes.saturating_sub(self.process_bytes);
        self.process_peak_bytes.map_or(self.tree_bytes, |p| {
            self.tree_bytes.max(p.saturating_add(children))
        })
    }
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

#[cfg(test)]
mod tests {
    use super::MemoryReading;

    #[test]
    fn a_trees_peak_counts_the_processs_high_water_mark_with_its_childrens_bytes_now() {
        let r = |own: u64, tree: u64, hwm: Option<u64>| MemoryReading {
            t: 0.0,
            process_bytes: own,
            tree_bytes: tree,
            tree_pss_bytes: None,
            processes: 2,
            children_bytes: None,
            process_peak_bytes: hwm,
        };
        // No high-water mark: the tree now.
        assert_eq!(r(100, 150, None).tree_peak_bytes(), 150);
        // The process peaked at 300 between readings; its child holds 50 now.
        assert_eq!(r(100, 150, Some(300)).tree_peak_bytes(), 350);
        // A mark below what the tree holds now changes nothing.
        assert_eq!(r(100, 150, Some(100)).tree_peak_bytes(), 150);
    }
}
