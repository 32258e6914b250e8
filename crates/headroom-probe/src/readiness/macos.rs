//! Pure parsers of the macOS commands doctor reads: `sw_vers`, `sysctl`, `file`, `lipo`,
//! `pmset -g`, `pmset -g batt`, `pmset -g therm` and `system_profiler SPDisplaysDataType`.
//! They build and are tested on Linux against real captured outputs; only [`super::system`]
//! calls the commands, on macOS.

use std::collections::BTreeMap;

use super::{BatteryFacts, Conditions, GpuFacts, MachineFacts, PowerSource};

/// What the macOS tools printed for [`super::system::machine`], each `None` where the tool did
/// not answer.
#[derive(Debug, Default, Clone, Copy)]
pub struct MachineOutputs<'a> {
    /// `sw_vers`
    pub sw_vers: Option<&'a str>,
    /// `sysctl hw.memsize hw.optional.arm64 kern.osrelease`
    pub sysctl: Option<&'a str>,
    /// `sysctl sysctl.proc_translated` (stdout and stderr)
    pub proc_translated: Option<&'a str>,
    /// `system_profiler SPDisplaysDataType -json`
    pub system_profiler_json: Option<&'a str>,
}

/// Fills `m` from the macOS tools' outputs: OS name and version, kernel, Apple Silicon, memory,
/// Rosetta translation and GPUs. The only logic between the commands and [`MachineFacts`].
pub fn apply_machine_outputs(m: &mut MachineFacts, out: MachineOutputs<'_>) {
    if let Some(t) = out.sw_vers {
        let kv = parse_colon_pairs(t);
        m.os_name = kv.get("ProductName").cloned();
        m.os_version = kv.get("ProductVersion").cloned();
    }
    if let Some(t) = out.sysctl {
        let kv = parse_colon_pairs(t);
        m.apple_silicon = kv.get("hw.optional.arm64").map(String::as_str) == Some("1");
        m.kernel = kv.get("kern.osrelease").cloned();
        if let Some(b) = kv.get("hw.memsize").and_then(|v| v.parse().ok()) {
            m.memory_total_bytes = Some(b);
        }
    }
    m.translated = out.proc_translated.and_then(parse_proc_translated);
    if m.apple_silicon {
        m.arch = "arm64".into();
    }
    m.gpus = out
        .system_profiler_json
        .map(parse_system_profiler_json)
        .unwrap_or_default();
}

/// Power source, battery, Low Power Mode and thermal warnings from `pmset -g batt`, `pmset -g`
/// and `pmset -g therm` (each `None` where it did not answer).
pub fn conditions_from_pmset(
    batt: Option<&str>,
    settings: Option<&str>,
    therm: Option<&str>,
) -> Conditions {
    let mut c = Conditions::default();
    if let Some(t) = batt {
        let (source, battery) = parse_pmset_batt(t);
        c.power_source = Some(source);
        c.battery = battery;
    }
    c.low_power_mode = settings.and_then(parse_pmset_low_power);
    if let Some(t) = therm {
        c.thermal_exposed = true;
        c.thermal_warnings = parse_pmset_therm(t);
    }
    c
}

/// Power source, battery, Low Power Mode and the thermal state from the platform's own APIs:
/// IOKit's power sources, and `NSProcessInfo`'s `isLowPowerModeEnabled` and `thermalState`
/// (0 nominal … 3 critical). Says what `pmset` says, in the same words.
pub fn conditions_from_platform(
    sources: &[headroom_model::conditions::PowerSourceDescription],
    on_mains: Option<bool>,
    low_power: Option<bool>,
    thermal_state: Option<isize>,
) -> Conditions {
    let battery = sources
        .iter()
        .find(|s| s.kind.as_deref() == Some("InternalBattery"));
    let from_state = |s: &str| match s {
        "AC Power" => PowerSource::Ac,
        "Battery Power" => PowerSource::Battery,
        "UPS Power" => PowerSource::Ups,
        _ => PowerSource::Unknown,
    };
    let power_source = battery
        .and_then(|b| b.state.as_deref())
        .map(from_state)
        .or_else(|| {
            on_mains.map(|m| {
                if m {
                    PowerSource::Ac
                } else {
                    PowerSource::Battery
                }
            })
        });
    let battery = battery.map(|b| {
        let on_ac = b.state.as_deref() == Some("AC Power");
        let state = match (b.is_charging, b.is_charged, on_ac) {
            (Some(true), _, _) => Some("charging"),
            (_, Some(true), true) => Some("charged"),
            (_, _, true) => Some("AC attached; not charging"),
            (_, _, false) if b.state.is_some() => Some("discharging"),
            _ => None,
        };
        let percent = match (b.current_capacity, b.max_capacity) {
            (Some(c), Some(m)) if m > 0 => u32::try_from((c * 100 + m / 2) / m).ok(),
            (Some(c), None) => u32::try_from(c).ok(),
            _ => None,
        };
        let remaining = b
            .time_to_empty
            .filter(|m| *m >= 0 && !on_ac)
            .map(|m| format!("{}:{:02}", m / 60, m % 60));
        BatteryFacts {
            percent,
            state: state.map(str::to_owned),
            remaining,
        }
    });
    let mut c = Conditions {
        power_source,
        battery,
        low_power_mode: low_power,
        ..Conditions::default()
    };
    if let Some(t) = thermal_state {
        c.thermal_exposed = true;
        match t {
            2 => c
                .thermal_warnings
                .push("thermal state serious: the CPU and GPU are being throttled".to_owned()),
            3 => c
                .thermal_warnings
                .push("thermal state critical: the CPU and GPU are throttled hard".to_owned()),
            _ => {}
        }
    }
    c
}

/// `key: value` lines of `sysctl NAME...` (or `sw_vers`, whose separator is also `:`), in order.
/// Lines without a colon (errors, blank lines) are skipped.
pub fn parse_colon_pairs(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let k = k.trim();
            (!k.is_empty() && !k.contains(' ')).then(|| (k.to_owned(), v.trim().to_owned()))
        })
        .collect()
}

/// `sysctl sysctl.proc_translated` (or `-n`): `Some(true)` when the process runs under Rosetta,
/// `Some(false)` when native, `None` when the OID is unknown (an Intel Mac: nothing to translate).
pub fn parse_proc_translated(text: &str) -> Option<bool> {
    if text.contains("unknown oid") {
        return None;
    }
    let last = text.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    let value = last.rsplit(':').next()?.trim();
    match value {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// The Mach-O architectures named by `lipo -archs` (`x86_64 arm64`) or `lipo -info`
/// (`Non-fat file: … is architecture: arm64`, `Architectures in the fat file: … are: x86_64 arm64`).
pub fn parse_lipo_archs(text: &str) -> Vec<String> {
    let mut archs = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let list = if let Some((_, rest)) = line.rsplit_once(" is architecture:") {
            rest
        } else if let Some((_, rest)) = line.rsplit_once(" are:") {
            rest
        } else if line.split_whitespace().all(is_arch_name) {
            line
        } else {
            continue;
        };
        for a in list.split_whitespace().filter(|a| is_arch_name(a)) {
            push_unique(&mut archs, a);
        }
    }
    archs
}

/// The Mach-O architectures `file` reports for one path, in either macOS's own wording
/// (`Mach-O 64-bit executable x86_64`, `Mach-O universal binary with 2 architectures: [x86_64:…]
/// [arm64:…]`) or upstream libmagic's (`Mach-O 64-bit x86_64 executable, flags:<…>`). Lines of
/// other paths in the same output are ignored when `path` is given; `(for architecture X)` lines
/// count for their path.
pub fn parse_file_archs(text: &str, path: Option<&str>) -> Vec<String> {
    let mut archs = Vec::new();
    // Join the continuation lines of a wrapped `[...]` group to the line that opened it.
    let mut logical: Vec<String> = Vec::new();
    for line in text.lines() {
        let open = logical
            .last()
            .is_some_and(|l| l.matches('[').count() > l.matches(']').count());
        match logical.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => logical.push(line.to_owned()),
        }
    }
    for line in &logical {
        let Some((who, what)) = line.split_once(':') else {
            continue;
        };
        let who = who.trim();
        let who = who
            .split_once(" (for architecture")
            .map_or(who, |(p, _)| p.trim());
        if path.is_some_and(|p| who != p) {
            continue;
        }
        if !what.contains("Mach-O") {
            continue;
        }
        if what.contains("universal binary") {
            // Each `[arch:description]` or bare `[arch]` group starts with the architecture.
            for group in what.split('[').skip(1) {
                let name = group.split([':', ']']).next().unwrap_or_default().trim();
                if is_arch_name(name) {
                    push_unique(&mut archs, name);
                }
            }
        } else {
            for word in what
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|w| is_arch_name(w))
            {
                push_unique(&mut archs, word);
            }
        }
    }
    archs
}

fn is_arch_name(word: &str) -> bool {
    matches!(
        word,
        "x86_64" | "x86_64h" | "arm64" | "arm64e" | "i386" | "ppc" | "ppc64" | "armv7"
    )
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_owned());
    }
}

/// `pmset -g batt` (or `pmset -g ps`): where power comes from and the first internal battery.
pub fn parse_pmset_batt(text: &str) -> (PowerSource, Option<BatteryFacts>) {
    let mut source = PowerSource::Unknown;
    let mut battery = None;
    for line in text.lines() {
        if let Some(rest) = line.split_once("drawing from '").map(|(_, r)| r) {
            let name = rest.split('\'').next().unwrap_or_default();
            source = match name {
                "AC Power" => PowerSource::Ac,
                "Battery Power" => PowerSource::Battery,
                "UPS Power" => PowerSource::Ups,
                _ => PowerSource::Unknown,
            };
        } else if line.contains("InternalBattery") && battery.is_none() {
            let Some(pct_at) = line.find('%') else {
                continue;
            };
            let head = &line[..pct_at];
            // After the last non-digit character (whatever its width in bytes).
            let digits_from = head
                .char_indices()
                .rev()
                .find(|(_, c)| !c.is_ascii_digit())
                .map_or(0, |(i, c)| i + c.len_utf8());
            let percent = head[digits_from..].parse().ok();
            let rest = &line[pct_at + 1..];
            let rest = rest.split(" present:").next().unwrap_or_default();
            let mut state: Vec<&str> = Vec::new();
            let mut remaining = None;
            for field in rest.split(';').map(str::trim).filter(|f| !f.is_empty()) {
                if let Some(t) = field.strip_suffix(" remaining") {
                    remaining = Some(t.trim().to_owned());
                } else if !field.starts_with('(') {
                    state.push(field);
                }
            }
            battery = Some(BatteryFacts {
                percent,
                state: (!state.is_empty()).then(|| state.join("; ")),
                remaining,
            });
        }
    }
    (source, battery)
}

/// Low Power Mode from `pmset -g`: `lowpowermode 1` on older macOS, `powermode 1` on newer
/// (0 automatic, 1 low power, 2 high power). `None` when neither line is present (a desktop
/// without the setting).
pub fn parse_pmset_low_power(text: &str) -> Option<bool> {
    for line in text.lines() {
        let clean = line.replace('*', "");
        let mut words = clean.split_whitespace();
        let (Some(key), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        if key == "lowpowermode" || key == "powermode" {
            return Some(value == "1");
        }
    }
    None
}

/// `pmset -g therm`: `None` when no warning level has been recorded, else the recorded lines
/// (e.g. `CPU_Scheduler_Limit = 80`), which mean the system is throttling.
pub fn parse_pmset_therm(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Note: No "))
        .filter(|l| l.contains('=') || l.to_ascii_lowercase().contains("warning level"))
        .filter(|l| {
            // A limit of 100 (percent) is no limit at all.
            !l.split_once('=')
                .is_some_and(|(_, v)| v.trim() == "100" || v.trim() == "0")
        })
        .map(ToOwned::to_owned)
        .collect()
}

/// The GPUs of `system_profiler SPDisplaysDataType -json`.
pub fn parse_system_profiler_json(text: &str) -> Vec<GpuFacts> {
    let json_start = text.find('{').unwrap_or(0);
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text[json_start..]) else {
        return Vec::new();
    };
    let Some(items) = doc.get("SPDisplaysDataType").and_then(|v| v.as_array()) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let name = item
                .get("sppci_model")
                .or_else(|| item.get("_name"))?
                .as_str()?
                .to_owned();
            let cores = item
                .get("sppci_cores")
                .and_then(|c| c.as_str())
                .and_then(|c| c.parse().ok());
            Some(GpuFacts {
                name,
                cores,
                memory_bytes: None,
                driver: None,
                source: "system_profiler".into(),
            })
        })
        .collect()
}

/// The GPUs of the plain-text `system_profiler SPDisplaysDataType`.
pub fn parse_system_profiler_text(text: &str) -> Vec<GpuFacts> {
    let mut gpus: Vec<GpuFacts> = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("Chipset Model:") {
            gpus.push(GpuFacts {
                name: name.trim().to_owned(),
                cores: None,
                memory_bytes: None,
                driver: None,
                source: "system_profiler".into(),
            });
        } else if let Some(cores) = line.strip_prefix("Total Number of Cores:") {
            if let Some(g) = gpus.last_mut() {
                g.cores = cores.trim().parse().ok();
            }
        }
    }
    gpus
}

/// `(major, minor, patch)` of a version such as `14.2.1` or `12.3`.
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.trim().split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
    });
    let major = parts.next()?.ok()?;
    let minor = parts.next().and_then(Result::ok).unwrap_or(0);
    let patch = parts.next().and_then(Result::ok).unwrap_or(0);
    Some((major, minor, patch))
}
