//! What the rest of the machine did while a point was timed: the CPU time other processes used
//! (the busiest named), the OS's memory pressure and swap, and other processes on the same
//! accelerator, so a figure measured beside a busy conferencing app or a build says so.
//! Headroom's own process tree (the sweep, its worker, the user's script it started) is left out.
//! Parsers are pure and tested on real captured output; the readings only start the tools.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use headroom_model::pointload::Pressure;

pub use headroom_model::pointload::{
    AccelUser, PointLoad, ACCEL_WARN_SHARE, LOAD_WARN_CORES, SWAP_WARN_BYTES,
};

/// `nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits`
/// lines (`4242, /usr/bin/python3, 2566` — MiB): `(pid, name, bytes)` each. A name may hold
/// commas; a memory figure of `[N/A]` (some drivers, some containers) gives `None`.
pub fn parse_nvidia_compute_apps(text: &str) -> Vec<(u32, String, Option<u64>)> {
    text.lines()
        .filter_map(|l| {
            let (pid, rest) = l.split_once(',')?;
            let pid: u32 = pid.trim().parse().ok()?;
            let (name, mib) = rest.rsplit_once(',')?;
            let bytes = mib.trim().parse::<u64>().ok().map(|m| m << 20);
            Some((pid, name.trim().to_owned(), bytes))
        })
        .collect()
}

pub use crate::gpu_busy::parse_agc_last_submission_pid;

/// The other processes on an NVIDIA GPU, from its compute-apps list. `mine` says whether a pid
/// is in Headroom's own tree, `named` names a pid this machine's process table has. When the
/// list's pids are from another pid namespace (a container: none of them is in this table), only
/// the count can tell: everything past the one the worker itself is counts as another process.
pub fn nvidia_others(
    apps: &[(u32, String, Option<u64>)],
    mine: impl Fn(u32) -> bool,
    named: impl Fn(u32) -> Option<String>,
) -> Vec<AccelUser> {
    let visible = apps
        .iter()
        .any(|(pid, _, _)| named(*pid).is_some() || mine(*pid));
    if visible {
        return apps
            .iter()
            .filter(|(pid, _, _)| !mine(*pid))
            .map(|(pid, name, bytes)| AccelUser {
                pid: Some(*pid),
                name: named(*pid).unwrap_or_else(|| short_name(name)),
                bytes: *bytes,
                share: None,
            })
            .collect();
    }
    // Foreign pids (a container's view): which one is the worker cannot be told, so only the
    // count of the others is.
    match apps.len() {
        0 | 1 => Vec::new(),
        n => vec![AccelUser {
            pid: None,
            name: format!(
                "{} other process{} (pids outside this container's view)",
                n - 1,
                if n == 2 { "" } else { "es" }
            ),
            bytes: None,
            share: None,
        }],
    }
}

/// The other processes that submitted work to the Apple GPU, from the last-submitter pid read
/// again and again while a point ran: each with the share of readings it was last in.
pub fn apple_gpu_others(
    submitters: &[u32],
    mine: impl Fn(u32) -> bool,
    named: impl Fn(u32) -> Option<String>,
) -> Vec<AccelUser> {
    if submitters.is_empty() {
        return Vec::new();
    }
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for p in submitters.iter().filter(|p| !mine(**p)) {
        *counts.entry(*p).or_default() += 1;
    }
    let mut out: Vec<AccelUser> = counts
        .into_iter()
        .map(|(pid, n)| {
            #[allow(clippy::cast_precision_loss)]
            let share = n as f64 / submitters.len() as f64;
            AccelUser {
                pid: Some(pid),
                name: named(pid).unwrap_or_else(|| format!("pid {pid}")),
                bytes: None,
                share: Some(share),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.share
            .partial_cmp(&a.share)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out
}

fn short_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_owned()
}

/// Reads other processes' CPU time between [`OtherLoad::start`] and [`OtherLoad::read`].
pub struct OtherLoad {
    sys: sysinfo::System,
    base: HashMap<u32, u64>,
    at: Instant,
    /// The NVIDIA index whose compute processes are read at the end of a point, and NVML
    /// opened for it where the library is there.
    nvidia: Option<u32>,
    nvml: Option<crate::gpu_busy::NvidiaApps>,
    /// Memory pressure and swap when the point started.
    pressure: Option<(Option<Pressure>, String)>,
    swap: Option<u64>,
    /// Process groups that are the measured work, not load: the start being timed (its
    /// DataLoader workers stay in its group after they outlive it) and starts at their gates.
    groups: HashSet<u32>,
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
            nvidia: None,
            nvml: None,
            pressure: None,
            swap: None,
            groups: HashSet::new(),
        }
    }

    /// Counts process group `pgid` as the work measured, never as other load.
    pub fn exclude_group(&mut self, pgid: u32) {
        self.groups.insert(pgid);
    }

    /// Whether `pid` belongs to an excluded group.
    fn in_groups(&self, pid: u32) -> bool {
        if self.groups.is_empty() {
            return false;
        }
        let Ok(p) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: getpgid(2) only reads another process's group id.
        let g = unsafe { libc::getpgid(p) };
        u32::try_from(g).is_ok_and(|g| self.groups.contains(&g))
    }

    /// Also asks who else is on torch device `device` once the worker named it (`cuda:N`
    /// through `nvidia-smi`; Apple GPU submitters are handed to [`OtherLoad::read`] by the
    /// sampler that reads `ioreg`).
    pub fn watch_device(&mut self, device: &str) {
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        self.nvidia = crate::gpu_busy::nvidia_index(device, visible.as_deref());
        self.nvml = self.nvidia.and_then(crate::gpu_busy::NvidiaApps::open);
    }

    /// Whether `pid` is this process or one of its descendants, by the last refresh.
    fn tree(&self) -> HashSet<u32> {
        let procs = self.sys.processes();
        let parent: HashMap<u32, u32> = procs
            .values()
            .filter_map(|p| Some((p.pid().as_u32(), p.parent()?.as_u32())))
            .collect();
        let me = std::process::id();
        procs
            .keys()
            .map(|p| p.as_u32())
            .filter(|&start| {
                let mut pid = start;
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
            })
            .collect()
    }

    fn name_of(&self, pid: u32) -> Option<String> {
        self.sys
            .process(sysinfo::Pid::from_u32(pid))
            .map(|p| p.name().to_string_lossy().into_owned())
    }

    /// CPU milliseconds used so far by every process outside this process's tree.
    fn others(&mut self) -> HashMap<u32, (u64, String)> {
        use sysinfo::{ProcessRefreshKind, ProcessesToUpdate};
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing().with_cpu(),
        );
        let mine = self.tree();
        self.sys
            .processes()
            .values()
            .filter(|p| {
                let pid = p.pid().as_u32();
                p.thread_kind().is_none() && !mine.contains(&pid) && !self.in_groups(pid)
            })
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
        let (swap, pressure, detail) = crate::contention::system_pressure(
            &headroom_model::settings::ContentionConfig::default(),
        );
        self.swap = swap;
        self.pressure = Some((pressure, detail));
        self.at = Instant::now();
    }

    /// Other processes' CPU since [`OtherLoad::start`], the memory pressure and swap, and the
    /// accelerator's other users (`apple_submitters`: the last-submitter pids an `ioreg` sampler
    /// read meanwhile); `None` when it spans too little time to say (under 50 ms) or was never
    /// started.
    pub fn read(&mut self, apple_submitters: &[u32]) -> Option<PointLoad> {
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
        let (swap, end_pressure, end_detail) = crate::contention::system_pressure(
            &headroom_model::settings::ContentionConfig::default(),
        );
        let (start_pressure, start_detail) = self.pressure.take().unwrap_or((None, String::new()));
        let (pressure, pressure_detail) = if end_pressure >= start_pressure {
            (end_pressure, end_detail)
        } else {
            (start_pressure, start_detail)
        };
        let mine = self.tree();
        let is_mine = |pid: u32| mine.contains(&pid) || self.in_groups(pid);
        let named = |pid: u32| self.name_of(pid);
        let mut accel_others = apple_gpu_others(apple_submitters, is_mine, named);
        if let Some(i) = self.nvidia {
            // NVML where it answers; `nvidia-smi` where the library lacks the call.
            let apps = self
                .nvml
                .as_ref()
                .and_then(crate::gpu_busy::NvidiaApps::read)
                .or_else(|| {
                    crate::child::tool_stdout(
                        "nvidia-smi",
                        &[
                            "-i",
                            &i.to_string(),
                            "--query-compute-apps=pid,process_name,used_gpu_memory",
                            "--format=csv,noheader,nounits",
                        ],
                    )
                    .as_deref()
                    .map(parse_nvidia_compute_apps)
                })
                .unwrap_or_default();
            accel_others.extend(nvidia_others(&apps, is_mine, named));
        }
        Some(PointLoad {
            other_cores: cores(total),
            busiest_cores: busiest.as_ref().map_or(0.0, |b| cores(b.1)),
            busiest: busiest.filter(|b| b.1 > 0).map(|b| b.0),
            seconds,
            pressure,
            pressure_detail: pressure.map(|_| pressure_detail),
            swap_growth_bytes: match (self.swap, swap) {
                (Some(a), Some(b)) => i64::try_from(b)
                    .ok()
                    .zip(i64::try_from(a).ok())
                    .map(|(b, a)| b - a),
                _ => None,
            },
            accel_others,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet() -> PointLoad {
        PointLoad {
            other_cores: 0.1,
            busiest: None,
            busiest_cores: 0.0,
            seconds: 0.3,
            pressure: Some(Pressure::Normal),
            pressure_detail: Some("PSI some avg10 0.0 %, full avg10 0.0 %".into()),
            swap_growth_bytes: Some(0),
            accel_others: Vec::new(),
        }
    }

    #[test]
    fn nvidia_compute_apps_from_a_real_h200() {
        let text = include_str!(
            "../../headroom-core/tests/fixtures/nvidia/nvidia_smi_compute_apps_h200.txt"
        );
        let apps = parse_nvidia_compute_apps(text);
        assert_eq!(apps, vec![(475, "python3".to_owned(), Some(10852 << 20))]);
        // A name with a comma, memory not available, garbage and the header are handled.
        let odd =
            "pid, process_name, used_gpu_memory [MiB]\n12, /opt/my,app/python, [N/A]\nnonsense\n";
        assert_eq!(
            parse_nvidia_compute_apps(odd),
            vec![(12, "/opt/my,app/python".to_owned(), None)]
        );
        assert!(parse_nvidia_compute_apps("").is_empty());
    }

    #[test]
    fn the_other_gpu_processes_are_those_outside_this_tree() {
        let apps = vec![
            (100, "/usr/bin/python3".to_owned(), Some(3 << 30)),
            (200, "headroom-worker".to_owned(), Some(90 << 30)),
        ];
        // Pids this machine can see: the worker (200) is ours, python3 the other.
        let others = nvidia_others(
            &apps,
            |p| p == 200,
            |p| (p == 100).then(|| "python3".into()),
        );
        assert_eq!(others.len(), 1);
        assert_eq!(others[0].pid, Some(100));
        assert_eq!(others[0].name, "python3");
        assert_eq!(others[0].bytes, Some(3 << 30));
        // Only ours: nobody else.
        assert!(nvidia_others(&apps[1..], |p| p == 200, |_| None).is_empty());
        // Pids from another namespace: only the count of the others can be told.
        let foreign = nvidia_others(&apps, |_| false, |_| None);
        assert_eq!(foreign.len(), 1);
        assert!(
            foreign[0].name.starts_with("1 other process ("),
            "{foreign:?}"
        );
        assert!(nvidia_others(&apps[..1], |_| false, |_| None).is_empty());
    }

    #[test]
    fn the_apple_gpu_last_submitter_from_a_real_m1_pro() {
        let text = include_str!(
            "../../headroom-core/tests/fixtures/macos/ioreg_IOAccelerator_m1pro_monterey.txt"
        );
        assert_eq!(parse_agc_last_submission_pid(text), Some(390));
        assert_eq!(
            parse_agc_last_submission_pid("\"fLastSubmissionPID\"=0"),
            None
        );
        assert_eq!(parse_agc_last_submission_pid("no such key"), None);
        // Readings while a point ran: ours (7) mostly, WindowServer (390) now and then, another
        // app (55) a third of the time.
        let readings = [7, 7, 55, 7, 390, 55, 7, 55, 7];
        let names = |p: u32| match p {
            55 => Some("zoom.us".to_owned()),
            390 => Some("WindowServer".to_owned()),
            _ => None,
        };
        let others = apple_gpu_others(&readings, |p| p == 7, names);
        assert_eq!(others[0].name, "zoom.us");
        assert!((others[0].share.unwrap_or(0.0) - 3.0 / 9.0).abs() < 1e-9);
        let load = PointLoad {
            accel_others: others,
            ..quiet()
        };
        let w = load.warnings(64);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("zoom.us (pid 55) submitting work in 33 % of readings"),
            "{}",
            w[0]
        );
        assert!(
            !w[0].contains("WindowServer"),
            "one reading in nine is not a share that matters: {}",
            w[0]
        );
        assert!(apple_gpu_others(&[], |_| false, names).is_empty());
    }

    #[test]
    fn memory_pressure_and_swap_growth_are_named_at_their_thresholds() {
        assert!(quiet().warnings(8).is_empty());
        let warn = PointLoad {
            pressure: Some(Pressure::Warn),
            pressure_detail: Some("kern.memorystatus_vm_pressure_level 2".into()),
            ..quiet()
        };
        let w = warn.warnings(8);
        assert!(
            w.len() == 1
                && w[0].contains("warning memory pressure (kern.memorystatus_vm_pressure_level 2)"),
            "{w:?}"
        );
        let paging = |g: i64| PointLoad {
            swap_growth_bytes: Some(g),
            ..quiet()
        };
        assert!(paging(SWAP_WARN_BYTES - 1).warnings(8).is_empty());
        let w = paging(SWAP_WARN_BYTES).warnings(8);
        assert!(
            w.len() == 1 && w[0].contains("swap grew by 64.0 MiB"),
            "{w:?}"
        );
        assert!(
            paging(-(1 << 30)).warnings(8).is_empty(),
            "swap that shrank is no paging"
        );
        let cpu = PointLoad {
            other_cores: LOAD_WARN_CORES,
            busiest: Some("zoom.us".into()),
            busiest_cores: 0.4,
            ..quiet()
        };
        assert!(
            cpu.warnings(8)[0].contains("zoom.us used 0.4 cores, other processes 0.5 cores in all")
        );
        let just_under = PointLoad {
            other_cores: LOAD_WARN_CORES - 0.01,
            ..quiet()
        };
        assert!(just_under.warnings(8).is_empty());
    }

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
        let r = l.read(&[]).expect("a reading");
        let _ = own.wait();
        // About one core, less when the tests beside it share these cores.
        assert!(r.other_cores >= 0.3, "{r:?}");
        assert!(r.busiest.is_some() && r.busiest_cores > 0.0, "{r:?}");
        let w = r.warnings(64);
        let cpu: Vec<&String> = w.iter().filter(|w| w.contains("cores in all")).collect();
        if r.other_cores >= LOAD_WARN_CORES {
            assert!(
                cpu.len() == 1
                    && cpu[0].contains("batch 64")
                    && cpu[0].contains(r.busiest.as_deref().unwrap_or("?")),
                "{w:?}"
            );
        } else {
            assert!(cpu.is_empty(), "{w:?}");
        }
        assert!(r.pressure_detail.is_none() || r.pressure.is_some());
        assert!(
            r.accel_others.is_empty(),
            "a CPU reading asks no accelerator"
        );
        assert!(
            OtherLoad::new().read(&[]).is_none(),
            "no reading before a start"
        );
    }
}
