//! Memory contention: who holds the memory the training run needs. Every process is sampled
//! (sysinfo), attributed to the app at the root of its tree (conferencing, IDEs, browsers, the
//! training runs Headroom knows of, the rest), and set against the system side: available
//! memory, swap and the OS's own pressure level. The attribution and the verdict are pure
//! functions over samples; only [`Sampler`] and the thin per-OS readers touch the machine.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use headroom_model::budget::format_bytes;
use headroom_model::settings::ContentionConfig;

/// What a process is counted as.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Conferencing,
    Ide,
    Browser,
    /// Ollama, LM Studio, llama.cpp's server and the like: a model held in memory the whole day.
    LocalLlm,
    Training,
    /// Headroom itself: the process sampling and everything it started that is not a training
    /// run (the app's web page, its workers), so the user sees what it costs.
    Headroom,
    Other,
}

impl Group {
    pub fn label(self) -> &'static str {
        match self {
            Self::Conferencing => "conferencing",
            Self::Ide => "IDEs",
            Self::Browser => "browsers",
            Self::LocalLlm => "local LLM servers",
            Self::Training => "training",
            Self::Headroom => "Headroom",
            Self::Other => "everything else",
        }
    }
}

/// One process as sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct Proc {
    pub pid: u32,
    pub parent: Option<u32>,
    /// The kernel's name for it (`comm` on Linux, at most 15 bytes there).
    pub name: String,
    /// The executable's path, when readable.
    pub exe: Option<String>,
    /// The first word of its command line, when readable.
    pub arg0: Option<String>,
    pub bytes: u64,
}

/// The memory of one app (a matched process and everything under it).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppMemory {
    pub name: String,
    pub bytes: u64,
    pub processes: u32,
}

/// The memory of one group, its apps largest first.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupMemory {
    pub group: Group,
    pub bytes: u64,
    pub processes: u32,
    pub apps: Vec<AppMemory>,
}

pub use headroom_model::pointload::Pressure;

/// The system side of one sample.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemSide {
    pub total_bytes: u64,
    pub available_bytes: u64,
    pub swap_used_bytes: Option<u64>,
    pub pressure: Option<Pressure>,
    /// Where the pressure level came from, with its raw figures.
    pub pressure_detail: String,
}

/// The memory the training run needs, and what measured it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Need {
    pub bytes: u64,
    pub source: String,
}

/// One contention sample with its verdict.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentionReport {
    pub groups: Vec<GroupMemory>,
    pub system: SystemSide,
    pub need: Option<Need>,
    /// Swap growth since the previous sample, when there was one.
    pub swap_growth_bytes: Option<i64>,
    pub raised: bool,
    /// Why contention is raised (empty when it is not), each with its figures and threshold.
    pub reasons: Vec<String>,
    /// What this sample cost: wall time and processes read.
    pub sample_ms: f64,
    pub processes: u32,
}

impl ContentionReport {
    /// Bytes held by `group`.
    pub fn bytes(&self, group: Group) -> u64 {
        self.groups
            .iter()
            .find(|g| g.group == group)
            .map_or(0, |g| g.bytes)
    }
}

/// The outermost `X.app` folder in a path, without `.app` (`/Applications/zoom.us.app/...` →
/// `zoom.us`): an app's helpers live inside its bundle.
pub fn bundle_name(path: &str) -> Option<&str> {
    path.split('/').find_map(|c| c.strip_suffix(".app"))
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `entry` names `candidate`: equal, or `candidate` is `entry` followed by a space (case
/// ignored), so `Code` names `Code Helper (Renderer)` but not `Codex`.
pub fn names(entry: &str, candidate: &str) -> bool {
    let (e, c) = (entry.to_lowercase(), candidate.to_lowercase());
    !e.is_empty() && (c == e || c.strip_prefix(&e).is_some_and(|r| r.starts_with(' ')))
}

/// Interpreters are never attributed to the app they were started from: a `python train.py`
/// in the IDE's terminal is not the IDE's memory.
fn is_interpreter(p: &Proc) -> bool {
    let n = p.name.to_lowercase();
    n.starts_with("python")
}

/// The process whose tree is Headroom's own: this one, or the tray process that started it
/// (`headroom-tray` starts the popover's app with `HEADROOM_TRAY_PID`), so the tray is in the
/// Headroom group the popover shows.
pub fn own_root() -> u32 {
    own_root_from(
        std::env::var("HEADROOM_TRAY_PID").ok().as_deref(),
        std::os::unix::process::parent_id(),
        std::process::id(),
    )
}

/// [`own_root`] from its inputs: the tray's pid counts only while it is this process's parent
/// (a process that inherited the variable further down is not the popover).
pub fn own_root_from(tray: Option<&str>, parent: u32, me: u32) -> u32 {
    tray.and_then(|t| t.trim().parse::<u32>().ok())
        .filter(|t| *t == parent && *t > 1)
        .unwrap_or(me)
}

/// The app `p` itself is, by the configured lists: its group and the name to show.
fn own_app(p: &Proc, cfg: &ContentionConfig) -> Option<(Group, String)> {
    let mut cands: Vec<&str> = vec![p.name.as_str()];
    for path in [p.exe.as_deref(), p.arg0.as_deref()].into_iter().flatten() {
        if let Some(b) = bundle_name(path) {
            cands.insert(0, b);
        }
        cands.push(file_name(path));
    }
    let lists = [
        (Group::Conferencing, &cfg.conferencing),
        (Group::Ide, &cfg.ides),
        (Group::Browser, &cfg.browsers),
        (Group::LocalLlm, &cfg.llm_servers),
    ];
    cands.iter().find_map(|c| {
        lists.iter().find_map(|(g, list)| {
            list.iter()
                .any(|e| names(e, c))
                .then(|| (*g, (*c).to_owned()))
        })
    })
}

/// Attributes every process to a group and an app. A process belongs to the training run when
/// it or an ancestor is one of `training` (its data-loader workers, too); else to Headroom when
/// it or an ancestor is `own` (the process sampling); else to the outermost ancestor (or
/// itself) the lists name, so an app's helpers count as the app, climbing no higher than an
/// interpreter; else to "everything else".
pub fn classify(
    procs: &[Proc],
    cfg: &ContentionConfig,
    training: &[u32],
    own: Option<u32>,
) -> Vec<GroupMemory> {
    classify_with(procs, cfg, training, own, &|_| None)
}

/// [`classify`], with Headroom's own processes charged `own_share(pid)` where it answers
/// instead of their resident bytes: a menu-bar app and its WebKit processes share most of their
/// pages, so the sum of their RSS counts the same libraries three times over (392 MiB for an
/// open popover whose PSS is 210 MiB, `bench/popover_footprint.sh`).
pub fn classify_with(
    procs: &[Proc],
    cfg: &ContentionConfig,
    training: &[u32],
    own: Option<u32>,
    own_share: &dyn Fn(u32) -> Option<u64>,
) -> Vec<GroupMemory> {
    let by_pid: HashMap<u32, &Proc> = procs.iter().map(|p| (p.pid, p)).collect();
    let training: HashSet<u32> = training.iter().copied().collect();
    let ancestors = |p: &Proc| {
        let mut chain = vec![p.pid];
        let mut at = p.parent;
        while let Some(pid) = at {
            if chain.contains(&pid) || chain.len() > 64 {
                break;
            }
            chain.push(pid);
            at = by_pid.get(&pid).and_then(|q| q.parent);
        }
        chain
    };
    let mut apps: HashMap<(Group, String), (u64, u32)> = HashMap::new();
    for p in procs {
        let chain = ancestors(p);
        let place = if let Some(t) = chain.iter().find(|pid| training.contains(pid)) {
            (Group::Training, format!("training run (pid {t})"))
        } else if own.is_some_and(|o| chain.contains(&o)) {
            (Group::Headroom, "Headroom".to_owned())
        } else {
            chain
                .iter()
                .filter_map(|pid| by_pid.get(pid))
                .take_while(|q| !is_interpreter(q))
                .filter_map(|q| own_app(q, cfg))
                .last()
                .unwrap_or((Group::Other, String::new()))
        };
        let bytes = if place.0 == Group::Headroom {
            own_share(p.pid).unwrap_or(p.bytes)
        } else {
            p.bytes
        };
        let slot = apps.entry(place).or_default();
        slot.0 += bytes;
        slot.1 += 1;
    }
    let mut groups: Vec<GroupMemory> = [
        Group::Conferencing,
        Group::Ide,
        Group::Browser,
        Group::LocalLlm,
        Group::Training,
        Group::Headroom,
        Group::Other,
    ]
    .into_iter()
    .map(|g| {
        let mut list: Vec<AppMemory> = apps
            .iter()
            .filter(|((group, name), _)| *group == g && !name.is_empty())
            .map(|((_, name), (bytes, n))| AppMemory {
                name: name.clone(),
                bytes: *bytes,
                processes: *n,
            })
            .collect();
        list.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
        let (bytes, processes) = apps
            .iter()
            .filter(|((group, _), _)| *group == g)
            .fold((0, 0), |(b, n), (_, (bb, nn))| (b + bb, n + nn));
        GroupMemory {
            group: g,
            bytes,
            processes,
            apps: list,
        }
    })
    .collect();
    groups.retain(|g| g.processes > 0 || !matches!(g.group, Group::Training | Group::Headroom));
    groups
}

/// Judges one sample: raised when the OS reports warn/critical pressure, when swap grew by the
/// threshold since the last sample, or when conferencing + IDEs hold at least `apps_share` of
/// RAM while what is left available no longer covers the training run's need.
#[allow(clippy::cast_precision_loss)]
pub fn judge(
    groups: &[GroupMemory],
    system: &SystemSide,
    need: Option<&Need>,
    swap_growth: Option<i64>,
    cfg: &ContentionConfig,
) -> Vec<String> {
    let mut reasons = Vec::new();
    let held: u64 = groups
        .iter()
        .filter(|g| matches!(g.group, Group::Conferencing | Group::Ide | Group::LocalLlm))
        .map(|g| g.bytes)
        .sum();
    // A local LLM server is named with what it holds: it keeps its model in memory all day.
    let llm: Vec<String> = groups
        .iter()
        .filter(|g| g.group == Group::LocalLlm && g.bytes > 0)
        .flat_map(|g| &g.apps)
        .map(|a| format!("{} {}", a.name, format_bytes(a.bytes)))
        .collect();
    let holders = if llm.is_empty() {
        "conferencing and IDEs".to_owned()
    } else {
        format!(
            "conferencing, IDEs and local LLM servers ({})",
            llm.join(", ")
        )
    };
    let total = system.total_bytes.max(1);
    let share = held as f64 / total as f64;
    let reserve = reserve_bytes(total, cfg);
    let against = match need {
        Some(n) => format!(
            "below the {} {} needs plus a {:.0} % reserve ({})",
            format_bytes(n.bytes),
            n.source,
            cfg.reserve_share * 100.0,
            format_bytes(reserve)
        ),
        None => format!(
            "below the {:.0} % reserve ({}; no training run measured yet)",
            cfg.reserve_share * 100.0,
            format_bytes(reserve)
        ),
    };
    let short = short_of_memory(system.available_bytes, total, need, cfg);
    if share >= cfg.apps_share && short {
        reasons.push(format!(
            "{holders} hold {} ({:.0} % of {} RAM; threshold {:.0} %) and {} is available, {against}",
            format_bytes(held),
            share * 100.0,
            format_bytes(system.total_bytes),
            cfg.apps_share * 100.0,
            format_bytes(system.available_bytes),
        ));
    }
    if let Some(g) = swap_growth {
        let limit = i64::try_from(cfg.swap_growth_mib << 20).unwrap_or(i64::MAX);
        if g >= limit {
            reasons.push(format!(
                "swap grew by {} since the last sample (threshold {} MiB)",
                format_bytes(g.unsigned_abs()),
                cfg.swap_growth_mib
            ));
        }
    }
    if let Some(p @ (Pressure::Warn | Pressure::Critical)) = system.pressure {
        let level = if p == Pressure::Warn {
            "warning"
        } else {
            "critical"
        };
        reasons.push(format!(
            "the OS reports {level} memory pressure ({})",
            system.pressure_detail
        ));
    }
    reasons
}

/// Linux pressure-stall figures for memory (`/proc/pressure/memory`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Psi {
    /// Share of the last 10 s in which some task stalled on memory (percent).
    pub some_avg10: f64,
    /// Share of the last 10 s in which all non-idle tasks stalled (percent).
    pub full_avg10: f64,
}

/// Parses `/proc/pressure/memory`.
pub fn parse_psi(text: &str) -> Option<Psi> {
    let avg10 = |kind: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        line.split_whitespace()
            .find_map(|f| f.strip_prefix("avg10="))?
            .parse()
            .ok()
    };
    Some(Psi {
        some_avg10: avg10("some ")?,
        full_avg10: avg10("full ").unwrap_or(0.0),
    })
}

/// The pressure level PSI figures mean under the configured thresholds.
pub fn psi_pressure(psi: Psi, cfg: &ContentionConfig) -> Pressure {
    if psi.full_avg10 >= cfg.psi_critical {
        Pressure::Critical
    } else if psi.some_avg10 >= cfg.psi_warn {
        Pressure::Warn
    } else {
        Pressure::Normal
    }
}

/// macOS `kern.memorystatus_vm_pressure_level` (`sysctl` or `sysctl -n` output; the last value
/// wins): 1 normal, 2 warning, 4 critical.
pub fn parse_vm_pressure_level(text: &str) -> Option<(Pressure, u32)> {
    text.lines()
        .rev()
        .find_map(|l| {
            let v = match l.split_once("kern.memorystatus_vm_pressure_level:") {
                Some((_, v)) => v,
                None if !l.contains(':') => l,
                None => return None,
            };
            v.trim().parse::<u32>().ok()
        })
        .and_then(|n| {
            let p = match n {
                1 => Pressure::Normal,
                2 => Pressure::Warn,
                4 => Pressure::Critical,
                _ => return None,
            };
            Some((p, n))
        })
}

/// macOS `memory_pressure`'s last line, "System-wide memory free percentage: 86%".
pub fn parse_memory_pressure_free(text: &str) -> Option<u8> {
    text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("System-wide memory free percentage:")?
            .trim()
            .strip_suffix('%')?
            .parse()
            .ok()
    })
}

/// macOS `sysctl vm.swapusage` (with or without the name): the `used = 4259.25M` figure.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn parse_swapusage_used(text: &str) -> Option<u64> {
    let rest = text.split("used = ").nth(1)?;
    let word = rest.split_whitespace().next()?;
    let (num, unit) = word.split_at(word.find(|c: char| c.is_ascii_alphabetic())?);
    let scale: u64 = match unit {
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return None,
    };
    let v: f64 = num.parse().ok()?;
    (v >= 0.0).then(|| (v * scale as f64).round() as u64)
}

/// Linux swap in use from `/proc/meminfo`: `SwapTotal - SwapFree`.
pub fn parse_meminfo_swap_used(text: &str) -> Option<u64> {
    let kib = |key: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    };
    kib("SwapTotal:")?
        .saturating_sub(kib("SwapFree:")?)
        .checked_mul(1024)
}

/// Swap and pressure on macOS from `sysctl -n vm.swapusage` and `sysctl -n
/// kern.memorystatus_vm_pressure_level` (each `None` where it did not answer): `(swap used,
/// pressure, where it came from)`.
pub fn macos_pressure(
    swapusage: Option<&str>,
    level: Option<&str>,
) -> (Option<u64>, Option<Pressure>, String) {
    let swap = swapusage.and_then(parse_swapusage_used);
    match level.and_then(parse_vm_pressure_level) {
        Some((p, n)) => (
            swap,
            Some(p),
            format!("kern.memorystatus_vm_pressure_level {n}"),
        ),
        None => (
            swap,
            None,
            "kern.memorystatus_vm_pressure_level unreadable".into(),
        ),
    }
}

/// Reads swap and pressure on this OS: `(swap used, pressure, where it came from)`.
pub fn system_pressure(cfg: &ContentionConfig) -> (Option<u64>, Option<Pressure>, String) {
    #[cfg(target_os = "linux")]
    {
        let swap = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| parse_meminfo_swap_used(&t));
        match std::fs::read_to_string("/proc/pressure/memory")
            .ok()
            .and_then(|t| parse_psi(&t))
        {
            Some(psi) => (
                swap,
                Some(psi_pressure(psi, cfg)),
                format!(
                    "PSI some avg10 {:.1} %, full avg10 {:.1} %",
                    psi.some_avg10, psi.full_avg10
                ),
            ),
            None => (swap, None, "no /proc/pressure/memory on this kernel".into()),
        }
    }
    #[cfg(target_os = "macos")]
    {
        let _ = cfg;
        let sysctl = |name: &str| crate::child::tool_stdout("/usr/sbin/sysctl", &["-n", name]);
        macos_pressure(
            sysctl("vm.swapusage").as_deref(),
            sysctl("kern.memorystatus_vm_pressure_level").as_deref(),
        )
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = cfg;
        (None, None, "not measured on this OS".into())
    }
}

/// The memory kept in reserve: `reserve_share` of `total`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn reserve_bytes(total: u64, cfg: &ContentionConfig) -> u64 {
    (total as f64 * cfg.reserve_share) as u64
}

/// Whether `available` is short of what the apps rule weighs it against: the training run's
/// need (none measured: nothing) plus the reserve.
fn short_of_memory(
    available: u64,
    total: u64,
    need: Option<&Need>,
    cfg: &ContentionConfig,
) -> bool {
    available
        < need
            .map_or(0, |n| n.bytes)
            .saturating_add(reserve_bytes(total, cfg))
}

/// Samples processes and the system again and again, cheaply: process names and paths are read
/// once per process, memory every time.
pub struct Sampler {
    sys: sysinfo::System,
    last_swap: Option<u64>,
    /// Read the process list only when it can matter (see [`Sampler::set_light`]).
    light: bool,
    /// The last process list read, and when.
    last_procs: Option<(Instant, Vec<Proc>)>,
}

/// A light sampler reads the process list again at least this often.
pub const LIGHT_REFRESH: std::time::Duration = std::time::Duration::from_secs(60);

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("processes", &self.sys.processes().len())
            .field("last_swap", &self.last_swap)
            .finish()
    }
}

impl Default for Sampler {
    fn default() -> Self {
        Self::new()
    }
}

impl Sampler {
    pub fn new() -> Self {
        Self {
            sys: sysinfo::System::new(),
            last_swap: None,
            light: false,
            last_procs: None,
        }
    }

    /// A light sampler (a menu-bar app whose popover is closed) reads the process list (a scan of
    /// every process, most of a sample's cost) only when the apps could matter — the memory
    /// available is below what the apps rule compares it with — or when its last reading is
    /// older than [`LIGHT_REFRESH`]; otherwise the groups come from that reading. Memory, swap
    /// and pressure are read every time, so every rule that can fire still fires on time.
    pub fn set_light(&mut self, light: bool) {
        self.light = light;
    }

    /// Every process now, as [`Proc`]s (threads left out).
    pub fn processes(&mut self) -> Vec<Proc> {
        use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, UpdateKind};
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing()
                .with_memory()
                .with_exe(UpdateKind::OnlyIfNotSet)
                .with_cmd(UpdateKind::OnlyIfNotSet),
        );
        self.sys
            .processes()
            .values()
            .filter(|p| p.thread_kind().is_none())
            .map(|p| Proc {
                pid: p.pid().as_u32(),
                parent: p.parent().map(sysinfo::Pid::as_u32),
                name: p.name().to_string_lossy().into_owned(),
                exe: p.exe().map(|e| e.to_string_lossy().into_owned()),
                arg0: p.cmd().first().map(|a| a.to_string_lossy().into_owned()),
                bytes: p.memory(),
            })
            .collect()
    }

    /// One sample, judged. `training` are the pids of the runs Headroom knows of; `need` what
    /// the training run was measured to need.
    pub fn sample(
        &mut self,
        cfg: &ContentionConfig,
        training: &[u32],
        need: Option<Need>,
    ) -> ContentionReport {
        let start = Instant::now();
        let mem = crate::sysmem::system_memory();
        // The apps rule fires only when the memory available is short.
        let short = mem
            .as_ref()
            .is_none_or(|m| short_of_memory(m.available, m.total.max(1), need.as_ref(), cfg));
        let fresh = self
            .last_procs
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < LIGHT_REFRESH);
        let procs = match &self.last_procs {
            Some((_, procs)) if self.light && fresh && !short => procs.clone(),
            _ => {
                let procs = self.processes();
                self.last_procs = Some((Instant::now(), procs.clone()));
                procs
            }
        };
        let groups = classify_with(
            &procs,
            cfg,
            training,
            Some(own_root()),
            &crate::sysmem::pid_share,
        );
        let (swap, pressure, detail) = system_pressure(cfg);
        let system = SystemSide {
            total_bytes: mem.map_or(0, |m| m.total),
            available_bytes: mem.map_or(0, |m| m.available),
            swap_used_bytes: swap,
            pressure,
            pressure_detail: detail,
        };
        let swap_growth = match (self.last_swap, swap) {
            (Some(a), Some(b)) => {
                Some(i64::try_from(b).unwrap_or(i64::MAX) - i64::try_from(a).unwrap_or(i64::MAX))
            }
            _ => None,
        };
        self.last_swap = swap;
        let reasons = judge(&groups, &system, need.as_ref(), swap_growth, cfg);
        ContentionReport {
            groups,
            system,
            need,
            swap_growth_bytes: swap_growth,
            raised: !reasons.is_empty(),
            reasons,
            sample_ms: start.elapsed().as_secs_f64() * 1e3,
            processes: u32::try_from(procs.len()).unwrap_or(u32::MAX),
        }
    }
}

#[cfg(test)]
mod tests;
