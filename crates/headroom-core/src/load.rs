//! What the rest of the machine did while a point was timed: the CPU time other processes used
//! (the busiest named), so a figure measured beside a busy conferencing app or a build says so.
//! Headroom's own process tree (the sweep, its worker, the user's script it started) is left out.

use std::collections::HashMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Other processes' CPU while a point was timed.
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
}

/// Other processes using this many cores while a point is timed make its figure suspect.
pub const LOAD_WARN_CORES: f64 = 0.5;

impl PointLoad {
    /// The warning for a point timed under load, when the load was enough to matter.
    pub fn warning(&self, batch: u32) -> Option<String> {
        (self.other_cores >= LOAD_WARN_CORES).then(|| {
            let who = self.busiest.as_ref().map_or_else(String::new, |b| {
                format!("{b} used {:.1} cores, ", self.busiest_cores)
            });
            format!(
                "batch {batch} was timed while {who}other processes {:.1} cores in all: its throughput may read low; measure again when the machine is quieter",
                self.other_cores
            )
        })
    }
}

/// Reads other processes' CPU time between [`OtherLoad::start`] and [`OtherLoad::read`].
pub struct OtherLoad {
    sys: sysinfo::System,
    base: HashMap<u32, u64>,
    at: Instant,
}

impl std::fmt::Debug for OtherLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtherLoad")
            .field("processes", &self.base.len())
            .finish_non_exhaustive()
    }
}

impl Default for OtherLoad {
    fn default() -> Self {
        Self::new()
    }
}

impl OtherLoad {
    pub fn new() -> Self {
        Self {
            sys: sysinfo::System::new(),
            base: HashMap::new(),
            at: Instant::now(),
        }
    }

    /// CPU milliseconds used so far by every process outside this process's tree.
    fn others(&mut self) -> HashMap<u32, (u64, String)> {
        use sysinfo::{ProcessRefreshKind, ProcessesToUpdate};
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing().with_cpu(),
        );
        let procs = self.sys.processes();
        let parent: HashMap<u32, u32> = procs
            .values()
            .filter_map(|p| Some((p.pid().as_u32(), p.parent()?.as_u32())))
            .collect();
        let me = std::process::id();
        let mine = |mut pid: u32| {
            for _ in 0..64 {
                if pid == me {
                    return true;
                }
                match parent.get(&pid) {
                    Some(&up) if up != pid => pid = up,
                    _ => return false,
                }
            }
            false
        };
        procs
            .values()
            .filter(|p| p.thread_kind().is_none() && !mine(p.pid().as_u32()))
            .map(|p| {
                (
                    p.pid().as_u32(),
                    (
                        p.accumulated_cpu_time(),
                        p.name().to_string_lossy().into_owned(),
                    ),
                )
            })
            .collect()
    }

    /// Starts a reading (the point's timed steps begin).
    pub fn start(&mut self) {
        self.base = self.others().into_iter().map(|(k, v)| (k, v.0)).collect();
        self.at = Instant::now();
    }

    /// Other processes' CPU since [`OtherLoad::start`]; `None` when it spans too little time to
    /// say (under 50 ms) or was never started.
    pub fn read(&mut self) -> Option<PointLoad> {
        let seconds = self.at.elapsed().as_secs_f64();
        if self.base.is_empty() || seconds < 0.05 {
            return None;
        }
        let now = self.others();
        let mut per_name: HashMap<String, u64> = HashMap::new();
        let mut total = 0u64;
        for (pid, (ms, name)) in now {
            // A process started during the point counts from zero.
            let used = ms.saturating_sub(self.base.get(&pid).copied().unwrap_or(0));
            total += used;
            *per_name.entry(name).or_default() += used;
        }
        let busiest = per_name.into_iter().max_by_key(|(_, ms)| *ms);
        #[allow(clippy::cast_precision_loss)]
        let cores = |ms: u64| ms as f64 / 1e3 / seconds;
        Some(PointLoad {
            other_cores: cores(total),
            busiest_cores: busiest.as_ref().map_or(0.0, |b| cores(b.1)),
            busiest: busiest.filter(|b| b.1 > 0).map(|b| b.0),
            seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real process outside this one's tree keeps a core busy: it counts, is named when it
    /// is the busiest, and this process's own child does not count.
    #[test]
    fn other_processes_count_and_this_tree_does_not() {
        // `sh` starts the spinner in the background and exits: the spinner is reparented out
        // of this tree, as a conferencing app or a build would be.
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                "python3 -c 'import time\nt=time.time()\nwhile time.time()-t<5: pass' >/dev/null 2>&1 & echo $!",
            ])
            .output()
            .expect("start a spinner");
        let other: u32 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("its pid");
        let mut own = std::process::Command::new("python3")
            .args([
                "-c",
                "import time\nt=time.time()\nwhile time.time()-t<3: pass",
            ])
            .spawn()
            .expect("own spinner");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut l = OtherLoad::new();
        let seen = l.others();
        assert!(seen.contains_key(&other), "the other spinner is seen");
        assert!(!seen.contains_key(&own.id()), "this tree is left out");
        assert!(!seen.contains_key(&std::process::id()));
        l.start();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let r = l.read().expect("a reading");
        let _ = own.wait();
        // About one core, less when the tests beside it share these cores.
        assert!(r.other_cores >= 0.3, "{r:?}");
        assert!(r.busiest.is_some() && r.busiest_cores > 0.0, "{r:?}");
        let w = r.warning(64);
        if r.other_cores >= LOAD_WARN_CORES {
            let w = w.expect("a warning");
            assert!(
                w.contains("batch 64") && w.contains(r.busiest.as_deref().unwrap_or("?")),
                "{w}"
            );
        } else {
            assert!(w.is_none());
        }
        assert!(
            OtherLoad::new().read().is_none(),
            "no reading before a start"
        );
    }
}
