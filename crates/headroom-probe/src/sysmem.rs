//! System and process memory facts. Pure parsers turn `/proc` files and macOS `vm_stat` output
//! into numbers; thin readers per OS call them.

use std::collections::HashMap;

/// Memory of the machine as a whole, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemMemory {
    pub total: u64,
    pub available: u64,
}

/// Parses `/proc/meminfo` (values in kB) into total and available memory.
pub fn parse_meminfo(text: &str) -> Option<SystemMemory> {
    let kv = kib_fields(text);
    Some(SystemMemory {
        total: *kv.get("MemTotal")?,
        available: *kv.get("MemAvailable")?,
    })
}

/// Parses the `VmRSS` and `VmHWM` lines of `/proc/<pid>/status` into (current, peak) bytes.
pub fn parse_proc_status(text: &str) -> Option<(u64, u64)> {
    let kv = kib_fields(text);
    Some((*kv.get("VmRSS")?, *kv.get("VmHWM")?))
}

fn kib_fields(text: &str) -> HashMap<&str, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let mut it = v.split_whitespace();
            let n: u64 = it.next()?.parse().ok()?;
            let mult = if it.next() == Some("kB") { 1024 } else { 1 };
            // A figure too large for u64 bytes is no reading at all.
            Some((k.trim(), n.checked_mul(mult)?))
        })
        .collect()
}

/// Parses macOS `vm_stat` output into the bytes the system could hand out without swapping:
/// free, inactive, speculative and purgeable pages, at the page size its header states.
pub fn parse_vm_stat_available(text: &str) -> Option<u64> {
    let header = text.lines().find(|l| l.contains("page size of"))?;
    let page: u64 = header
        .split("page size of")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let pages = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim().trim_matches('"') == name)
                .then(|| v.trim().trim_end_matches('.').parse().ok())?
        })
    };
    let free = pages("Pages free")?;
    let sum = free
        .checked_add(pages("Pages inactive").unwrap_or(0))?
        .checked_add(pages("Pages speculative").unwrap_or(0))?
        .checked_add(pages("Pages purgeable").unwrap_or(0))?;
    sum.checked_mul(page)
}

/// Reads total and available memory of this machine.
pub fn system_memory() -> Option<SystemMemory> {
    #[cfg(target_os = "linux")]
    {
        parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
    }
    #[cfg(target_os = "macos")]
    {
        macos::system_memory()
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        None
    }
}

/// Current and peak resident bytes of this process since the last [`reset_process_peak`].
pub fn process_memory() -> Option<(u64, u64)> {
    #[cfg(target_os = "linux")]
    {
        parse_proc_status(&std::fs::read_to_string("/proc/self/status").ok()?)
    }
    #[cfg(target_os = "macos")]
    {
        macos::process_memory()
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        None
    }
}

/// The memory process `pid` is charged for, or `None` when it is gone: resident bytes on Linux,
/// the physical footprint (`proc_pid_rusage`, see [`parse_rusage_info_v2`]) on macOS.
pub fn pid_rss(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        parse_proc_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
            .map(|(rss, _)| rss)
    }
    #[cfg(target_os = "macos")]
    {
        macos::pid_rss(pid)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = pid;
        None
    }
}

/// [`pid_rss`] and the most memory process `pid` has been charged for since it started, kept
/// exactly by the kernel so a peak between two readings is not missed: `VmHWM` on Linux (both
/// from one read of its status), the lifetime peak of the physical footprint
/// (`ri_lifetime_max_phys_footprint`) on macOS; `None` once the process is gone, and no peak
/// where the OS keeps none.
pub fn pid_rss_and_peak(pid: u32) -> Option<(u64, Option<u64>)> {
    #[cfg(target_os = "linux")]
    {
        parse_proc_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
            .map(|(rss, hwm)| (rss, Some(hwm)))
    }
    #[cfg(target_os = "macos")]
    {
        Some((macos::pid_rss(pid)?, macos::pid_peak_footprint(pid)))
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = pid;
        None
    }
}

/// The `Pss:` line of `/proc/<pid>/smaps_rollup` text, in bytes: resident memory with pages
/// shared between processes split among them, so a process tree's sum counts each page once.
pub fn parse_smaps_rollup_pss(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("Pss:")?;
        let kib: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
        kib.checked_mul(1024)
    })
}

/// Proportional set size of process `pid` (Linux only).
pub fn pid_pss(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        parse_smaps_rollup_pss(&std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// What process `pid` costs the machine with the pages it shares split among their sharers:
/// its PSS on Linux, its physical footprint on macOS (which leaves shared file pages out);
/// `None` when it cannot be read (gone, another user's, another system).
pub fn pid_share(pid: u32) -> Option<u64> {
    if cfg!(target_os = "macos") {
        pid_rss(pid)
    } else {
        pid_pss(pid)
    }
}

/// The memory figures of one process as the macOS kernel reports them in `rusage_info_v2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RusageMemory {
    /// `ri_resident_size`: resident pages, shared ones included.
    pub resident: u64,
    /// `ri_phys_footprint`: what Activity Monitor calls Memory and what the OS kills on
    /// (dirty and compressed anonymous memory, IOKit and Metal buffers, no shared file pages).
    pub phys_footprint: u64,
}

/// Size of `struct rusage_info_v2` in `<sys/resource.h>`: a 16-byte UUID and 18 `uint64_t`.
pub const RUSAGE_INFO_V2_SIZE: usize = 16 + 18 * 8;

/// Reads the resident size and the physical footprint out of the raw bytes of a
/// `rusage_info_v2` as `proc_pid_rusage(pid, RUSAGE_INFO_V2, ..)` fills it (native byte order).
/// After the UUID come user time, system time, package idle wakeups, interrupt wakeups, page-ins
/// and the wired size, then `ri_resident_size` (byte 64) and `ri_phys_footprint` (byte 72).
/// `None` when the buffer is shorter than the struct.
pub fn parse_rusage_info_v2(raw: &[u8]) -> Option<RusageMemory> {
    if raw.len() < RUSAGE_INFO_V2_SIZE {
        return None;
    }
    let word =
        |at: usize| -> Option<u64> { Some(u64::from_ne_bytes(raw[at..at + 8].try_into().ok()?)) };
    Some(RusageMemory {
        resident: word(16 + 6 * 8)?,
        phys_footprint: word(16 + 7 * 8)?,
    })
}

/// Resets the peak resident figure of this process so the next point measures its own peak.
/// Linux: writes `5` to `/proc/self/clear_refs`. Elsewhere the peak stays the lifetime peak;
/// returns whether the reset happened.
pub fn reset_process_peak() -> bool {
    #[cfg(target_os = "linux")]
    {
        std::fs::write("/proc/self/clear_refs", "5").is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

#[cfg(target_os = "macos")]
mod macos {
    //! The thin macOS layer: runs `sysctl`/`vm_stat` and asks the kernel for rusage.
    use super::{parse_vm_stat_available, SystemMemory};
    use crate::child::tool_stdout as run;

    pub(super) fn system_memory() -> Option<SystemMemory> {
        let total = run("/usr/sbin/sysctl", &["-n", "hw.memsize"])?
            .trim()
            .parse()
            .ok()?;
        let available = parse_vm_stat_available(&run("/usr/bin/vm_stat", &[])?)?;
        Some(SystemMemory { total, available })
    }

    /// The footprint of `pid` from `proc_pid_rusage`: no process is spawned per reading.
    pub(super) fn pid_rss(pid: u32) -> Option<u64> {
        let pid = libc::c_int::try_from(pid).ok()?;
        let mut raw = [0u64; super::RUSAGE_INFO_V2_SIZE / 8];
        // SAFETY: the kernel writes at most sizeof(rusage_info_v2) bytes (the flavor we ask
        // for) into `raw`, which is exactly that large and 8-byte aligned.
        let rc =
            unsafe { libc::proc_pid_rusage(pid, libc::RUSAGE_INFO_V2, raw.as_mut_ptr().cast()) };
        if rc != 0 {
            return None;
        }
        let bytes: Vec<u8> = raw.iter().flat_map(|w| w.to_ne_bytes()).collect();
        super::parse_rusage_info_v2(&bytes).map(|m| m.phys_footprint)
    }

    /// The lifetime peak of `pid`'s physical footprint, from `proc_pid_rusage`'s v4 record
    /// (macOS 10.14 and later).
    pub(super) fn pid_peak_footprint(pid: u32) -> Option<u64> {
        let pid = libc::c_int::try_from(pid).ok()?;
        // SAFETY: a plain struct of integers; zero is a valid value for each.
        let mut info: libc::rusage_info_v4 = unsafe { std::mem::zeroed() };
        // SAFETY: the kernel writes at most sizeof(rusage_info_v4) bytes for this flavor into
        // `info`, which is exactly that struct.
        let rc = unsafe {
            libc::proc_pid_rusage(
                pid,
                libc::RUSAGE_INFO_V4,
                std::ptr::addr_of_mut!(info).cast(),
            )
        };
        (rc == 0).then_some(info.ri_lifetime_max_phys_footprint)
    }

    pub(super) fn process_memory() -> Option<(u64, u64)> {
        let rss = pid_rss(std::process::id())?;
        // SAFETY: getrusage writes into the zeroed struct we own.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above; RUSAGE_SELF is always valid.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        // ru_maxrss is in bytes on macOS, and it is the lifetime peak: macOS cannot reset it.
        let peak = if rc == 0 {
            u64::try_from(usage.ru_maxrss).unwrap_or(rss)
        } else {
            rss
        };
        Some((rss, peak.max(rss)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pss_from_smaps_rollup() {
        let text = "55a0c000-7ffd1000 ---p 00000000 00:00 0                          [rollup]\nRss:              412344 kB\nPss:              215011 kB\nPss_Dirty:        180000 kB\n";
        assert_eq!(parse_smaps_rollup_pss(text), Some(215_011 * 1024));
        assert_eq!(parse_smaps_rollup_pss("Rss: 1 kB\n"), None);
    }

    #[test]
    fn footprint_from_a_rusage_info_v2_buffer() {
        // No captured buffer from a Mac exists in the fixtures; this one is laid out field by
        // field as <sys/resource.h> declares rusage_info_v2 (values as a 2.1 GiB Python shows).
        let fields: [u64; 18] = [
            9_000_000,   // ri_user_time
            1_000_000,   // ri_system_time
            3,           // ri_pkg_idle_wkups
            40,          // ri_interrupt_wkups
            120,         // ri_pageins
            16_384,      // ri_wired_size
            1_900 << 20, // ri_resident_size
            2_150 << 20, // ri_phys_footprint
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        let mut raw = vec![0xAB; 16];
        raw.extend(fields.iter().flat_map(|f| f.to_ne_bytes()));
        assert_eq!(raw.len(), RUSAGE_INFO_V2_SIZE);
        assert_eq!(
            parse_rusage_info_v2(&raw),
            Some(RusageMemory {
                resident: 1_900 << 20,
                phys_footprint: 2_150 << 20
            })
        );
        assert_eq!(parse_rusage_info_v2(&raw[..RUSAGE_INFO_V2_SIZE - 1]), None);
    }

    #[test]
    fn meminfo_and_status() {
        let meminfo =
            "MemTotal:       24557908 kB\nMemFree:        1000 kB\nMemAvailable:   23000000 kB\n";
        let m = parse_meminfo(meminfo);
        assert_eq!(
            m,
            Some(SystemMemory {
                total: 24_557_908 * 1024,
                available: 23_000_000 * 1024
            })
        );
        let status = "Name:\theadroom\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n";
        assert_eq!(parse_proc_status(status), Some((100 << 20, 200 << 20)));
        assert_eq!(parse_meminfo("garbage"), None);
    }

    #[test]
    fn vm_stat_from_a_real_apple_silicon_mac() {
        // tests/fixtures/macos/vm_stat_apple_silicon_mbp_2023.txt, first (source) line skipped.
        let text = include_str!(
            "../../headroom-core/tests/fixtures/macos/vm_stat_apple_silicon_mbp_2023.txt"
        );
        let body: String = text.lines().skip(1).collect::<Vec<_>>().join("\n");
        let avail = parse_vm_stat_available(&body);
        // free 1616097 + inactive 579357 + speculative 829846 + purgeable 125376 pages of 16 KiB.
        assert_eq!(
            avail,
            Some((1_616_097 + 579_357 + 829_846 + 125_376) * 16_384)
        );
    }
}

/// The fields of a `/proc/PID/stat` line that Headroom reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The command name (`comm`), which may hold spaces and parentheses.
    pub name: String,
    /// `R`, `S`, `D`, `Z` (a zombie: ended, its parent not yet told), `T`, …
    pub state: char,
    /// The process group.
    pub group: u32,
}

impl Stat {
    /// Parses a line of `/proc/PID/stat` (`12 (pt_data_worker) S 7 12 …`: the name is in
    /// parentheses and may hold spaces and parentheses itself).
    pub fn parse(stat: &str) -> Option<Self> {
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let name = stat.get(open + 1..close)?.to_owned();
        let mut rest = stat.get(close + 1..)?.split_whitespace();
        let state = rest.next()?.chars().next()?;
        let _ppid = rest.next()?;
        let group = rest.next()?.parse().ok()?;
        Some(Self { name, state, group })
    }

    /// Process `pid`'s, from /proc (Linux); `None` where it cannot be read (gone, or no /proc).
    pub fn of(pid: u32) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Whether the process has ended (a zombie still answers `kill(pid, 0)`).
    pub fn ended(&self) -> bool {
        self.state == 'Z'
    }
}

/// The processes of group `pgid` with their stat lines, from /proc (Linux); `None` where /proc
/// cannot be read, so that a caller can tell "none" from "cannot know".
pub fn group_members(pgid: u32) -> Option<Vec<(u32, Stat)>> {
    let dir = std::fs::read_dir("/proc").ok()?;
    Some(
        dir.flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let stat = Stat::of(pid)?;
                (stat.group == pgid).then_some((pid, stat))
            })
            .collect(),
    )
}

#[cfg(test)]
mod stat_tests {
    use super::Stat;

    #[test]
    fn a_stat_line_gives_its_name_state_and_group_even_with_odd_names() {
        let line =
            "4242 (pt_data_worker) S 4200 4200 31 34816 4200 4194368 2000 0 0 0 3 1 0 0 20 0 1 0";
        let s = Stat::parse(line).expect("parsed");
        assert_eq!(
            (s.name.as_str(), s.state, s.group),
            ("pt_data_worker", 'S', 4200)
        );
        assert!(!s.ended());
        let odd = Stat::parse("7 (a (b) c) Z 1 9 9 0 -1").expect("parsed");
        assert_eq!(
            (odd.name.as_str(), odd.state, odd.group),
            ("a (b) c", 'Z', 9)
        );
        assert!(odd.ended());
        assert_eq!(Stat::parse("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_and_found_in_its_group() {
        let me = std::process::id();
        let s = Stat::of(me).expect("our own stat");
        assert!(!s.ended());
        let members = super::group_members(s.group).expect("/proc is readable");
        assert!(members.iter().any(|(pid, _)| *pid == me), "{members:?}");
        assert_eq!(Stat::of(u32::MAX), None);
    }
}
