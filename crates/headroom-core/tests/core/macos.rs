//! The macOS layer's assembly, run on Linux against real captured outputs: on a Mac each
//! `cfg(target_os = "macos")` reader only runs a tool and hands its text to one of the functions
//! tested here (tests/fixtures/macos, each with its source on the first line).

use headroom_model::conditions::PowerSourceDescription;
use headroom_probe::contention::{macos_pressure, parse_memory_pressure_free, Pressure};
use headroom_probe::machine::parse_sysctl_value;
use headroom_probe::readiness::macos::{
    apply_machine_outputs, conditions_from_platform, conditions_from_pmset, parse_colon_pairs,
    MachineOutputs,
};
use headroom_probe::readiness::{MachineFacts, PowerSource};
use headroom_probe::sysmem::parse_vm_stat_available;

/// A fixture without its `# source:` line.
fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/macos/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect(&path);
    text.lines()
        .filter(|l| !l.starts_with("# source:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What `machine()` knows before asking any macOS tool (as a Rosetta-free arm64 build sees it).
fn before_tools() -> MachineFacts {
    MachineFacts {
        os: "macos".into(),
        os_name: None,
        os_version: None,
        kernel: None,
        cpu: None,
        cpu_cores: Some(10),
        arch: "aarch64".into(),
        process_arch: "aarch64".into(),
        apple_silicon: false,
        translated: None,
        memory_total_bytes: None,
        gpus: Vec::new(),
        sandboxed: false,
        isolation: None,
    }
}

#[test]
fn machine_facts_from_sw_vers_sysctl_and_system_profiler() {
    let sw_vers = fixture("sw_vers_sonoma_14_2_1.txt");
    let sw_vers: String = sw_vers
        .lines()
        .skip_while(|l| !l.starts_with("$ sw_vers"))
        .skip(1)
        .take_while(|l| !l.starts_with("$ "))
        .collect::<Vec<_>>()
        .join("\n");
    let sysctl = fixture("sysctl_hw_machdep_m5_tahoe.txt");
    let translated = fixture("sysctl_proc_translated_native_vs_rosetta.txt");
    // The native half of the fixture: what `sysctl sysctl.proc_translated` prints in an arm64 shell.
    let native: String = translated
        .lines()
        .skip(1)
        .take(1)
        .collect::<Vec<_>>()
        .join("\n");
    let profiler = fixture("system_profiler_SPDisplaysDataType_json_m3max_nodisplay.txt");
    let mut m = before_tools();
    apply_machine_outputs(
        &mut m,
        MachineOutputs {
            sw_vers: Some(&sw_vers),
            sysctl: Some(&sysctl),
            proc_translated: Some(&native),
            system_profiler_json: Some(&profiler),
        },
    );
    assert_eq!(m.os_name.as_deref(), Some("macOS"));
    assert_eq!(m.os_version.as_deref(), Some("14.2.1"));
    assert!(m.apple_silicon);
    assert_eq!(m.arch, "arm64");
    assert_eq!(m.memory_total_bytes, Some(25_769_803_776));
    assert_eq!(m.translated, Some(false));
    assert_eq!(m.gpus.len(), 1);
    assert_eq!(m.gpus[0].name, "Apple M3 Max");
    assert_eq!(m.gpus[0].cores, Some(40));

    // Under Rosetta the same shell says 1; a tool that did not answer leaves its facts unknown.
    let rosetta: String = translated.lines().nth(3).unwrap_or_default().to_owned();
    let mut m = before_tools();
    apply_machine_outputs(
        &mut m,
        MachineOutputs {
            proc_translated: Some(&rosetta),
            ..MachineOutputs::default()
        },
    );
    assert_eq!(m.translated, Some(true));
    assert!(!m.apple_silicon);
    assert_eq!((m.arch.as_str(), m.memory_total_bytes), ("aarch64", None));
    assert!(m.gpus.is_empty() && m.os_version.is_none());
}

#[test]
fn every_captured_sysctl_names_its_memory_and_arm64() {
    for (name, bytes, brand) in [
        (
            "sysctl_hw_machdep_m1pro_monterey.txt",
            17_179_869_184_u64,
            "Apple M1 Pro",
        ),
        (
            "sysctl_hw_machdep_m2_monterey.txt",
            17_179_869_184,
            "Apple M2",
        ),
        (
            "sysctl_hw_machdep_m3max_sequoia.txt",
            38_654_705_664,
            "Apple M3 Max",
        ),
        (
            "sysctl_hw_machdep_m4max_sequoia.txt",
            68_719_476_736,
            "Apple M4 Max",
        ),
        ("sysctl_hw_machdep_m5_tahoe.txt", 25_769_803_776, "Apple M5"),
    ] {
        let text = fixture(name);
        let mut m = before_tools();
        apply_machine_outputs(
            &mut m,
            MachineOutputs {
                sysctl: Some(&text),
                ..MachineOutputs::default()
            },
        );
        assert_eq!(m.memory_total_bytes, Some(bytes), "{name}");
        assert!(m.apple_silicon, "{name}");
        assert_eq!(parse_colon_pairs(&text)["machdep.cpu.brand_string"], brand);
    }
    assert_eq!(
        parse_sysctl_value(&fixture("sysctl_n_brand_string_m3max.txt")).as_deref(),
        Some("Apple M3 Max")
    );
    assert_eq!(parse_sysctl_value("\n"), None);
}

#[test]
fn conditions_from_pmset_on_battery_and_on_a_desktop() {
    let batt = fixture("pmset_batt_battery_discharging.txt");
    let settings = fixture("pmset_g_lowpowermode0_m1_monterey.txt").replace("**", "");
    let therm = fixture("pmset_therm_m1pro_monterey.txt");
    let c = conditions_from_pmset(Some(&batt), Some(&settings), Some(&therm));
    assert_eq!(c.power_source, Some(PowerSource::Battery));
    let battery = c.battery.expect("battery");
    assert_eq!(battery.percent, Some(95));
    assert_eq!(battery.remaining.as_deref(), Some("3:06"));
    assert_eq!(c.low_power_mode, Some(false));
    assert!(c.thermal_exposed);
    assert!(c.thermal_warnings.is_empty(), "{:?}", c.thermal_warnings);

    let desktop = fixture("pmset_batt_desktop_no_battery.txt");
    let c = conditions_from_pmset(Some(&desktop), None, None);
    assert!(c.battery.is_none());
    assert_eq!(c.low_power_mode, None);
    assert!(!c.thermal_exposed);
    let none = conditions_from_pmset(None, None, None);
    assert_eq!((none.power_source, none.thermal_exposed), (None, false));
}

/// The platform's APIs (IOKit's power sources, NSProcessInfo) say what `pmset` says for the same
/// machine: the situations of the captured `pmset -g batt` outputs, as IOKit describes them.
#[test]
fn the_platform_apis_say_what_pmset_says() {
    let battery = |state: &str, current: i64, charging: bool, empty: i64| PowerSourceDescription {
        kind: Some("InternalBattery".into()),
        state: Some(state.into()),
        current_capacity: Some(current),
        max_capacity: Some(100),
        is_charging: Some(charging),
        is_charged: Some(false),
        time_to_empty: Some(empty),
    };
    let settings = fixture("pmset_g_lowpowermode0_m1_monterey.txt").replace("**", "");
    for (file, source, low_power) in [
        (
            "pmset_batt_battery_discharging.txt",
            battery("Battery Power", 95, false, 186),
            Some(false),
        ),
        (
            "pmset_batt_ac_not_charging_m1_bigsur.txt",
            battery("AC Power", 80, false, -1),
            Some(false),
        ),
    ] {
        let pmset = conditions_from_pmset(Some(&fixture(file)), Some(&settings), None);
        let platform = conditions_from_platform(&[source], None, low_power, None);
        assert_eq!(platform, pmset, "{file}");
    }
    // A desktop: no battery; mains from the time-remaining estimate.
    let desktop = conditions_from_pmset(
        Some(&fixture("pmset_batt_desktop_no_battery.txt")),
        None,
        None,
    );
    let platform = conditions_from_platform(&[], Some(true), None, None);
    assert_eq!(platform, desktop);
    // Charging, and the thermal state: serious and critical are warnings, nominal none.
    let c = conditions_from_platform(
        &[battery("AC Power", 40, true, -1)],
        None,
        Some(true),
        Some(2),
    );
    let b = c.battery.expect("battery");
    assert_eq!(
        (b.percent, b.state.as_deref(), b.remaining),
        (Some(40), Some("charging"), None)
    );
    assert_eq!(c.low_power_mode, Some(true));
    assert!(c.thermal_exposed && c.thermal_warnings[0].starts_with("thermal state serious"));
    assert!(conditions_from_platform(&[], None, None, Some(0))
        .thermal_warnings
        .is_empty());
}

#[test]
fn pressure_and_swap_from_sysctl() {
    let swap = fixture("sysctl_n_vm_swapusage_48gb.txt");
    let (used, pressure, source) = macos_pressure(Some(&swap), Some("4\n"));
    assert_eq!(used, Some((4259.25 * 1_048_576.0_f64) as u64));
    assert_eq!(pressure, Some(Pressure::Critical));
    assert_eq!(source, "kern.memorystatus_vm_pressure_level 4");
    let (used, pressure, source) = macos_pressure(None, None);
    assert_eq!((used, pressure), (None, None));
    assert!(source.contains("unreadable"), "{source}");
}

#[test]
fn memory_pressure_free_percentages() {
    for (name, pct) in [
        ("memory_pressure_32gb_79pct_no_trailing_spaces.txt", 79),
        ("memory_pressure_32gb_86pct.txt", 86),
        ("memory_pressure_32gb_88pct_swap.txt", 88),
        ("memory_pressure_32gb_90pct.txt", 90),
    ] {
        assert_eq!(
            parse_memory_pressure_free(&fixture(name)),
            Some(pct),
            "{name}"
        );
    }
}

#[test]
fn vm_stat_of_newer_macs_with_tag_lines_and_heavy_swap() {
    // macOS 26 on an M5 Pro adds memory-tagging lines after Swapouts; they change nothing.
    let m5 = parse_vm_stat_available(&fixture("vm_stat_m5pro_macos26_with_tag_lines.txt"));
    assert_eq!(m5, Some((167_743 + 1_196_954 + 4_951 + 14_563) * 16_384));
    // A `date` line before the header, as pasted: the header is found wherever it is.
    let swapping =
        parse_vm_stat_available(&fixture("vm_stat_apple_silicon_16gb_swapping_2026.txt"));
    assert_eq!(swapping, Some((4_229 + 184_925 + 681 + 24) * 16_384));
}
