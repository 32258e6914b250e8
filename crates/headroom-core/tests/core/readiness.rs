//! Readiness parsers against real captured macOS outputs (tests/fixtures/macos, each with its
//! source on the first line) and real Linux files, and the verdict on hand-built facts.

use std::path::Path;

use headroom_probe::readiness::python::{MlxFacts, ProbeStatus, PythonFacts, TorchFacts};
use headroom_probe::readiness::{
    linux, macos, BatteryFacts, Conditions, DeviceCheck, GpuFacts, LibtorchFacts, LightState,
    MachineFacts, PowerSource, PythonReport, Report,
};

/// A fixture without its `# source:` line.
fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/macos")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    text.lines()
        .filter(|l| !l.starts_with("# source:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The output of one `$ command` block of a fixture that shows several.
fn block(text: &str, command: &str) -> String {
    let mut out = Vec::new();
    let mut on = false;
    for l in text.lines() {
        if let Some(c) = l.strip_prefix("$ ") {
            if on {
                break;
            }
            on = c == command;
            continue;
        }
        if on {
            out.push(l);
        }
    }
    out.join("\n")
}

#[test]
fn file_and_lipo_tell_x86_64_only_from_universal_and_arm64() {
    let t = fixture("file_lipo_mecab_x86_64_only_and_universal.txt");
    // The first `file` block: x86_64-only executable and dylib.
    let first = block(&t, "file mecab.mac libmecab.2.dylib");
    assert_eq!(
        macos::parse_file_archs(&first, Some("mecab.mac")),
        ["x86_64"]
    );
    assert_eq!(
        macos::parse_file_archs(&first, Some("libmecab.2.dylib")),
        ["x86_64"]
    );
    assert_eq!(
        macos::parse_lipo_archs(&block(&t, "lipo -archs mecab.mac")),
        ["x86_64"]
    );
    // The universal build (the second `file` block).
    let universal = t
        .split("$ file mecab.mac libmecab.2.dylib")
        .nth(2)
        .expect("second file block");
    assert_eq!(
        macos::parse_file_archs(universal, Some("mecab.mac")),
        ["x86_64", "arm64"]
    );

    let libmagic = fixture("file_python310_universal2_libmagic_style.txt");
    assert_eq!(
        macos::parse_file_archs(&libmagic, Some("bin/python3.10")),
        ["x86_64", "arm64"]
    );
    // A universal dylib whose `[...]` group wraps onto the next line.
    let framework = fixture("file_python_framework_universal2.txt");
    assert_eq!(
        macos::parse_file_archs(
            &framework,
            Some("/usr/local/bin/relocatable-python/Python.framework/Python")
        ),
        ["x86_64", "arm64"]
    );
    let lipo = fixture("lipo_info_python_arm64_miniforge.txt");
    assert_eq!(macos::parse_lipo_archs(&lipo), ["arm64"]);
    // Not a Mach-O file: nothing.
    assert!(macos::parse_file_archs("x: ASCII text", None).is_empty());
}

#[test]
fn sysctl_says_whether_the_process_is_translated() {
    let t = fixture("sysctl_proc_translated_native_vs_rosetta.txt");
    let mut answers = t
        .split("% ")
        .filter(|b| !b.trim().is_empty())
        .map(macos::parse_proc_translated);
    assert_eq!(answers.next(), Some(Some(false)), "arch -arm64");
    assert_eq!(answers.next(), Some(Some(true)), "arch -x86_64");
    let intel = fixture("sysctl_proc_translated_intel_unknown_oid.txt");
    assert_eq!(macos::parse_proc_translated(&intel), None);
    assert_eq!(macos::parse_proc_translated("1\n"), Some(true));
}

#[test]
fn sysctl_and_sw_vers_give_the_machine() {
    let rosetta = macos::parse_colon_pairs(&fixture("sysctl_hw_machdep_m1_rosetta2_monterey.txt"));
    assert_eq!(rosetta["machdep.cpu.brand_string"], "Apple M1");
    assert_eq!(rosetta["hw.optional.arm64"], "1");
    assert_eq!(rosetta["hw.memsize"], "17179869184");
    let m4 = macos::parse_colon_pairs(&fixture("sysctl_hw_machdep_m4max_sequoia.txt"));
    assert_eq!(m4["machdep.cpu.brand_string"], "Apple M4 Max");
    assert_eq!(m4["hw.memsize"], "68719476736");
    let sw = macos::parse_colon_pairs(&block(&fixture("sw_vers_sonoma_14_2_1.txt"), "sw_vers"));
    assert_eq!(sw["ProductName"], "macOS");
    assert_eq!(sw["ProductVersion"], "14.2.1");
    assert_eq!(macos::parse_version("14.2.1"), Some((14, 2, 1)));
    assert_eq!(macos::parse_version("12.3"), Some((12, 3, 0)));
    assert!(macos::parse_version("12.3") < Some((14, 0, 0)));
}

#[test]
fn pmset_batt_gives_source_and_battery() {
    let (s, b) = macos::parse_pmset_batt(&fixture("pmset_batt_battery_discharging.txt"));
    assert_eq!(s, PowerSource::Battery);
    assert_eq!(
        b,
        Some(BatteryFacts {
            percent: Some(95),
            state: Some("discharging".into()),
            remaining: Some("3:06".into())
        })
    );
    let (s, b) = macos::parse_pmset_batt(&fixture("pmset_batt_ac_not_charging_m1_bigsur.txt"));
    assert_eq!(s, PowerSource::Ac);
    let b = b.expect("battery");
    assert_eq!(b.percent, Some(80));
    assert_eq!(b.state.as_deref(), Some("AC attached; not charging"));
    assert_eq!(b.remaining, None);
    let (s, b) = macos::parse_pmset_batt(&fixture("pmset_batt_ac_charging_noid_intel.txt"));
    assert_eq!((s, b.and_then(|b| b.percent)), (PowerSource::Ac, Some(43)));
    let (s, b) = macos::parse_pmset_batt(&fixture("pmset_g_ps_ac_charging_harisekhon.txt"));
    assert_eq!((s, b.and_then(|b| b.percent)), (PowerSource::Ac, Some(86)));
    let (s, b) = macos::parse_pmset_batt(&fixture("pmset_batt_desktop_no_battery.txt"));
    assert_eq!((s, b), (PowerSource::Ac, None));
    let variants = fixture("pmset_batt_variants_elcapitan.txt");
    let parsed: Vec<_> = variants
        .split("\n--\n")
        .map(macos::parse_pmset_batt)
        .map(|(s, b)| (s, b.and_then(|b| b.percent)))
        .collect();
    assert_eq!(parsed.len(), 5);
    assert_eq!(parsed[0].0, PowerSource::Battery);
    assert_eq!(parsed[0].1, Some(89));
    assert_eq!(parsed[1].1, Some(90));
    assert_eq!(parsed[2].0, PowerSource::Ac);
    assert_eq!(parsed[4].1, Some(91));
    // "(no estimate)" is not a time left.
    let (_, b) = macos::parse_pmset_batt(variants.split("\n--\n").nth(1).expect("2nd"));
    assert_eq!(b.expect("battery").remaining, None);
}

#[test]
fn pmset_g_gives_low_power_mode_in_old_and_new_wording() {
    assert_eq!(
        macos::parse_pmset_low_power(&fixture("pmset_g_lowpowermode0_m1_monterey.txt")),
        Some(false)
    );
    assert_eq!(
        macos::parse_pmset_low_power(&fixture("pmset_g_powermode0_harisekhon.txt")),
        Some(false)
    );
    // The same output with the setting switched on.
    let on = fixture("pmset_g_powermode0_harisekhon.txt")
        .replace("powermode            0", "powermode            1");
    assert_eq!(macos::parse_pmset_low_power(&on), Some(true));
    assert_eq!(
        macos::parse_pmset_low_power("System-wide power settings:\n"),
        None
    );
    assert!(macos::parse_pmset_therm(&fixture("pmset_therm_m1pro_monterey.txt")).is_empty());
    assert_eq!(
        macos::parse_pmset_therm(
            "CPU_Scheduler_Limit \t= 100\nCPU_Available_CPUs \t= 8\nCPU_Speed_Limit \t= 70\n"
        ),
        ["CPU_Available_CPUs \t= 8", "CPU_Speed_Limit \t= 70"]
    );
}

#[test]
fn system_profiler_gives_gpu_name_and_cores() {
    let json = macos::parse_system_profiler_json(&fixture(
        "system_profiler_SPDisplaysDataType_json_m3max_nodisplay.txt",
    ));
    assert_eq!(json.len(), 1);
    assert_eq!(
        (json[0].name.as_str(), json[0].cores),
        ("Apple M3 Max", Some(40))
    );
    let text =
        macos::parse_system_profiler_text(&fixture("system_profiler_SPDisplaysDataType_m3.txt"));
    assert_eq!(text.len(), 1);
    assert_eq!(
        (text[0].name.as_str(), text[0].cores),
        ("Apple M3", Some(10))
    );
    assert!(macos::parse_system_profiler_json("not json").is_empty());
}

#[test]
fn elf_headers_of_real_binaries_name_this_machine() {
    let exe = std::env::current_exe().expect("exe");
    let bytes = std::fs::read(&exe).expect("read");
    let want = std::env::consts::ARCH;
    if cfg!(target_os = "linux") {
        assert_eq!(linux::elf_arch(&bytes), Some(want));
        let sh = std::fs::read("/bin/sh").expect("/bin/sh");
        assert_eq!(linux::elf_arch(&sh), Some(want));
    }
    assert_eq!(linux::elf_arch(b"#!/bin/sh\necho hi\n"), None);
    assert_eq!(linux::elf_arch(b"\x7fELF"), None);
}

#[test]
fn linux_os_release_and_nvidia_smi() {
    let text = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\n";
    assert_eq!(
        linux::parse_os_release(text).as_deref(),
        Some("Debian GNU/Linux 12 (bookworm)")
    );
    assert_eq!(
        linux::parse_os_release("NAME=Arch\nVERSION_ID=1\n").as_deref(),
        Some("Arch 1")
    );
    if let Ok(real) = std::fs::read_to_string("/etc/os-release") {
        assert!(linux::parse_os_release(&real).is_some_and(|n| !n.is_empty()));
    }
    // Captured on the H200 machine (bench/results/nvidia_smi_h200.txt).
    let smi = include_str!("../../../../bench/results/nvidia_smi_h200.txt");
    let gpus = linux::parse_nvidia_smi_csv(smi);
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0].name, "NVIDIA H200");
    assert!(gpus[0].memory_bytes.is_some_and(|b| b > 100 << 30));
    assert!(gpus[0].driver.is_some());
    assert!(linux::parse_nvidia_smi_csv(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    )
    .is_empty());
}

#[test]
fn linux_power_and_thermal_read_a_sysfs_tree() {
    // The real /sys of this machine: whatever it exposes must read without error.
    let _ = linux::read_power_supply(Path::new("/"));
    for z in linux::read_thermal_zones(Path::new("/")) {
        assert!(z.celsius > -50.0 && z.celsius < 150.0, "{z:?}");
    }
    // A laptop's layout, written out as the kernel names it.
    let root = tempfile::tempdir().expect("dir");
    let ps = root.path().join("sys/class/power_supply");
    let write = |p: &Path, f: &str, v: &str| {
        std::fs::create_dir_all(p).expect("mkdir");
        std::fs::write(p.join(f), v).expect("write");
    };
    write(&ps.join("AC"), "type", "Mains\n");
    write(&ps.join("AC"), "online", "0\n");
    write(&ps.join("BAT0"), "type", "Battery\n");
    write(&ps.join("BAT0"), "capacity", "57\n");
    write(&ps.join("BAT0"), "status", "Discharging\n");
    let (s, b) = linux::read_power_supply(root.path()).expect("supplies");
    assert_eq!(s, PowerSource::Battery);
    assert_eq!(b.and_then(|b| b.percent), Some(57));
    write(&ps.join("AC"), "online", "1\n");
    write(&ps.join("BAT0"), "status", "Charging\n");
    assert_eq!(
        linux::read_power_supply(root.path()).map(|x| x.0),
        Some(PowerSource::Ac)
    );
    let tz = root.path().join("sys/class/thermal/thermal_zone0");
    write(&tz, "type", "x86_pkg_temp\n");
    write(&tz, "temp", "97000\n");
    write(&tz, "trip_point_0_type", "passive\n");
    write(&tz, "trip_point_0_temp", "100000\n");
    let zones = linux::read_thermal_zones(root.path());
    assert_eq!(zones.len(), 1);
    assert_eq!(
        (zones[0].celsius, zones[0].trip_celsius),
        (97.0, Some(100.0))
    );
}

// ---- verdict ------------------------------------------------------------------------------

fn mac(apple_silicon: bool, version: &str) -> MachineFacts {
    MachineFacts {
        os: "macos".into(),
        os_name: Some("macOS".into()),
        os_version: Some(version.into()),
        kernel: None,
        cpu: Some("Apple M3 Max".into()),
        cpu_cores: Some(16),
        arch: "arm64".into(),
        process_arch: "aarch64".into(),
        apple_silicon,
        translated: Some(false),
        memory_total_bytes: Some(64 << 30),
        gpus: vec![GpuFacts {
            name: "Apple M3 Max".into(),
            cores: Some(40),
            memory_bytes: None,
            driver: None,
            source: "system_profiler".into(),
        }],
        sandboxed: false,
        isolation: None,
    }
}

fn lib(mps: bool, cuda: i64) -> LibtorchFacts {
    let check = |d: &str| DeviceCheck {
        device: d.into(),
        name: d.into(),
        memory_total_bytes: 1 << 30,
        matmul_ok: true,
        matmul_ms: Some(1.0),
        result_device: Some(d.into()),
        error: None,
    };
    let mut devices = vec![check("cpu")];
    devices.extend((0..cuda).map(|i| check(&format!("cuda:{i}"))));
    if mps {
        devices.push(check("mps"));
    }
    LibtorchFacts {
        version: "2.11.0".into(),
        cuda_devices: cuda,
        has_mps: mps,
        threads: 8,
        devices,
    }
}

fn python(machine: &str, torch: Option<TorchFacts>, archs: &[&str]) -> PythonReport {
    PythonReport {
        path: "/opt/py/bin/python3".into(),
        source: "PATH".into(),
        explicit: false,
        status: ProbeStatus::Ok,
        error: None,
        binary_archs: archs.iter().map(|a| (*a).to_owned()).collect(),
        facts: Some(PythonFacts {
            executable: "/opt/py/bin/python3".into(),
            version: "3.11.7".into(),
            implementation: "CPython".into(),
            machine: machine.into(),
            platform: "darwin".into(),
            prefix: "/opt/py".into(),
            in_venv: false,
            torch_error: torch
                .is_none()
                .then(|| "ModuleNotFoundError: No module named 'torch'".into()),
            torch,
            mlx: None,
            mlx_error: Some("ModuleNotFoundError: No module named 'mlx'".into()),
        }),
        seconds: 1.0,
    }
}

fn torch(version: &str, mps: (bool, bool), cuda: bool, matmul: &str) -> TorchFacts {
    TorchFacts {
        version: version.into(),
        cuda_version: cuda.then(|| "13.0".into()),
        mps_built: mps.0,
        mps_available: mps.1,
        cuda_available: cuda,
        cuda_devices: Vec::new(),
        matmul_device: Some(matmul.into()),
        matmul_error: None,
    }
}

fn state(r: &Report, backend: &str) -> LightState {
    r.lights
        .iter()
        .find(|l| l.backend == backend)
        .unwrap_or_else(|| panic!("no {backend} light in {:?}", r.lights))
        .state
}

fn reason(r: &Report, backend: &str) -> String {
    let l = r
        .lights
        .iter()
        .find(|l| l.backend == backend)
        .expect("light");
    format!("{} | fix: {}", l.reason, l.fix.as_deref().unwrap_or(""))
}

#[test]
fn an_x86_64_python_under_rosetta_is_red_for_mps_with_the_fix() {
    // platform.machine() printed x86_64 on an M1 (fixture), its binary x86_64-only (fixture).
    let machine = fixture("platform_machine_x86_64_on_m1_conda.txt")
        .lines()
        .last()
        .expect("line")
        .trim()
        .to_owned();
    let archs = macos::parse_lipo_archs(&block(
        &fixture("file_lipo_mecab_x86_64_only_and_universal.txt"),
        "lipo -archs mecab.mac",
    ));
    let archs: Vec<&str> = archs.iter().map(String::as_str).collect();
    let py = python(
        &machine,
        Some(torch("2.2.2", (false, false), false, "cpu")),
        &archs,
    );
    let r = Report::new(
        mac(true, "14.2.1"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![py],
    );
    assert_eq!(state(&r, "mps"), LightState::Red);
    let why = reason(&r, "mps");
    assert!(
        why.contains("Rosetta") && why.contains("only x86_64") && why.contains("arm64 Python"),
        "{why}"
    );
    assert_eq!(state(&r, "mlx"), LightState::Red, "{}", reason(&r, "mlx"));
    assert_eq!(state(&r, "cpu"), LightState::Green);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("2.2.2") && n.contains("2.11.0")),
        "{:?}",
        r.notes
    );
    assert!(r.any_red());
}

#[test]
fn a_native_arm64_python_with_mps_is_green_and_old_macos_or_cpu_only_builds_are_not() {
    let good = python(
        "arm64",
        Some(torch("2.11.0", (true, true), false, "mps:0")),
        &["arm64"],
    );
    let r = Report::new(
        mac(true, "15.1"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![good.clone()],
    );
    assert_eq!(state(&r, "mps"), LightState::Green, "{}", reason(&r, "mps"));
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    let r = Report::new(
        mac(true, "13.6"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![good.clone()],
    );
    assert_eq!(state(&r, "mps"), LightState::Yellow, "bf16 needs macOS 14");
    let r = Report::new(
        mac(true, "12.1"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![good.clone()],
    );
    assert_eq!(state(&r, "mps"), LightState::Red, "MPS needs 12.3");
    // Headroom's own libtorch without MPS: the user's torch works, Headroom's sweeps would not.
    let r = Report::new(
        mac(true, "15.1"),
        Conditions::default(),
        Ok(lib(false, 0)),
        vec![good],
    );
    assert_eq!(state(&r, "mps"), LightState::Yellow);
    let unbuilt = python(
        "arm64",
        Some(torch("2.11.0", (false, false), false, "cpu")),
        &["arm64"],
    );
    let r = Report::new(
        mac(true, "15.1"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![unbuilt],
    );
    assert_eq!(state(&r, "mps"), LightState::Red);
    assert!(reason(&r, "mps").contains("built without MPS"));
    let missing = python("arm64", None, &["arm64"]);
    let r = Report::new(
        mac(true, "15.1"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![missing],
    );
    assert_eq!(state(&r, "mps"), LightState::Yellow);
    assert!(reason(&r, "mps").contains("pip install torch"));
}

#[test]
fn mlx_found_is_green_with_its_device() {
    let mut py = python(
        "arm64",
        Some(torch("2.11.0", (true, true), false, "mps:0")),
        &["arm64"],
    );
    if let Some(f) = py.facts.as_mut() {
        f.mlx = Some(MlxFacts {
            version: Some("0.29.3".into()),
            default_device: "Device(gpu, 0)".into(),
        });
    }
    let r = Report::new(
        mac(true, "15.1"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![py],
    );
    assert_eq!(state(&r, "mlx"), LightState::Green);
    assert!(reason(&r, "mlx").contains("gpu"));
}

fn linux_box(gpu: bool) -> MachineFacts {
    MachineFacts {
        os: "linux".into(),
        os_name: Some("Debian GNU/Linux 12 (bookworm)".into()),
        os_version: None,
        kernel: None,
        cpu: Some("AMD EPYC".into()),
        cpu_cores: Some(16),
        arch: "x86_64".into(),
        process_arch: "x86_64".into(),
        apple_silicon: false,
        translated: None,
        memory_total_bytes: Some(128 << 30),
        gpus: if gpu {
            linux::parse_nvidia_smi_csv(include_str!(
                "../../../../bench/results/nvidia_smi_h200.txt"
            ))
        } else {
            Vec::new()
        },
        sandboxed: false,
        isolation: None,
    }
}

#[test]
fn cuda_is_shown_only_where_present_and_a_cpu_only_torch_is_red() {
    let py = python(
        "x86_64",
        Some(torch("2.11.0+cpu", (false, false), false, "cpu")),
        &["x86_64"],
    );
    let r = Report::new(
        linux_box(false),
        Conditions::default(),
        Ok(lib(false, 0)),
        vec![py.clone()],
    );
    assert!(
        r.lights.iter().all(|l| l.backend != "cuda"),
        "{:?}",
        r.lights
    );
    assert_eq!(state(&r, "mps"), LightState::Off);
    assert!(!r.any_red());
    let r = Report::new(
        linux_box(true),
        Conditions::default(),
        Ok(lib(false, 1)),
        vec![py],
    );
    assert_eq!(state(&r, "cuda"), LightState::Red);
    assert!(
        reason(&r, "cuda").contains("CPU-only build"),
        "{}",
        reason(&r, "cuda")
    );
    let good = python(
        "x86_64",
        Some(torch("2.11.0+cu130", (false, false), true, "cuda:0")),
        &["x86_64"],
    );
    let r = Report::new(
        linux_box(true),
        Conditions::default(),
        Ok(lib(false, 1)),
        vec![good.clone()],
    );
    assert_eq!(
        state(&r, "cuda"),
        LightState::Green,
        "{}",
        reason(&r, "cuda")
    );
    // The GPU is there but Headroom's libtorch cannot see it.
    let r = Report::new(
        linux_box(true),
        Conditions::default(),
        Ok(lib(false, 0)),
        vec![good],
    );
    assert_eq!(state(&r, "cuda"), LightState::Red);
}

#[test]
fn battery_low_power_mode_and_heat_are_yellow_and_unknown_is_off() {
    let py = python(
        "arm64",
        Some(torch("2.11.0", (true, true), false, "mps:0")),
        &["arm64"],
    );
    let (source, battery) = macos::parse_pmset_batt(&fixture("pmset_batt_battery_discharging.txt"));
    let on_battery = Conditions {
        power_source: Some(source),
        battery,
        low_power_mode: Some(true),
        thermal_exposed: true,
        thermal_warnings: Vec::new(),
        cpu_governor: None,
    };
    let r = Report::new(
        mac(true, "15.1"),
        on_battery,
        Ok(lib(true, 0)),
        vec![py.clone()],
    );
    assert_eq!(state(&r, "conditions"), LightState::Yellow);
    let why = reason(&r, "conditions");
    assert!(
        why.contains("battery (95%)") && why.contains("Low Power Mode"),
        "{why}"
    );
    let calm = Conditions {
        power_source: Some(PowerSource::Ac),
        battery: None,
        low_power_mode: Some(false),
        thermal_exposed: true,
        thermal_warnings: macos::parse_pmset_therm(&fixture("pmset_therm_m1pro_monterey.txt")),
        cpu_governor: None,
    };
    let r = Report::new(mac(true, "15.1"), calm, Ok(lib(true, 0)), vec![py.clone()]);
    assert_eq!(
        state(&r, "conditions"),
        LightState::Green,
        "{}",
        reason(&r, "conditions")
    );
    let r = Report::new(
        linux_box(false),
        Conditions::default(),
        Ok(lib(false, 0)),
        vec![py],
    );
    assert_eq!(state(&r, "conditions"), LightState::Off);
}

#[test]
fn no_interpreter_or_a_dead_libtorch_says_what_to_do() {
    let r = Report::new(
        linux_box(false),
        Conditions::default(),
        Err("its worker was killed by signal 11".into()),
        Vec::new(),
    );
    assert_eq!(state(&r, "cpu"), LightState::Red);
    assert!(reason(&r, "cpu").contains("signal 11") && reason(&r, "cpu").contains("bootstrap"));
    let r = Report::new(
        linux_box(false),
        Conditions::default(),
        Ok(lib(false, 0)),
        Vec::new(),
    );
    assert_eq!(state(&r, "cpu"), LightState::Yellow);
    assert!(reason(&r, "cpu").contains("--python"));
}

#[test]
fn a_battery_line_with_a_wide_character_before_the_percent_does_not_panic() {
    // Found by the seeded fuzz loop (tests/core/fuzz.rs, mutation 7762): a multi-byte character
    // right before the digits made the digit search cut inside it.
    let (_, b) = headroom_probe::readiness::macos::parse_pmset_batt(
        " -InternalBattery-0 (id=5374051)\t95\u{fffd}87%; charging",
    );
    assert_eq!(b.and_then(|b| b.percent), Some(87));
}

#[test]
fn figures_too_large_for_bytes_are_unknown_not_wrapped() {
    // Found by cargo-fuzz (fuzz/run.sh, target linux): a memory figure whose bytes overflow u64
    // panicked in debug builds and wrapped to a wrong size in release ones.
    let gpus = headroom_probe::readiness::linux::parse_nvidia_smi_csv(
        "NVIDIA H200, 99999999999999999, 580.159.04\n",
    );
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0].memory_bytes, None);
    assert_eq!(
        headroom_probe::sysmem::parse_smaps_rollup_pss("Pss: 99999999999999999 kB\n"),
        None
    );
}

#[test]
fn a_nightly_or_pre_release_torch_is_named_and_a_release_is_not() {
    use headroom_probe::readiness::verdict::{torch_build, TorchBuild};
    for v in ["2.11.0", "2.11.0+cu130", "2.5.1+cpu", "2.4.0+git8a7b9c"] {
        assert_eq!(torch_build(v), TorchBuild::Release, "{v}");
    }
    assert_eq!(
        torch_build("2.6.0.dev20241112+cpu"),
        TorchBuild::Nightly("20241112".into())
    );
    assert_eq!(torch_build("2.7.0.dev0"), TorchBuild::Nightly("0".into()));
    assert_eq!(
        torch_build("2.5.0rc1"),
        TorchBuild::PreRelease("rc1".into())
    );
    assert_eq!(
        torch_build("2.5.0a0+git1234"),
        TorchBuild::PreRelease("a0".into())
    );
    assert_eq!(torch_build("2.4.0b2"), TorchBuild::PreRelease("b2".into()));
    // Doctor says it of the interpreter that has it, with the stable pin to install.
    let nightly = python(
        "arm64",
        Some(torch("2.6.0.dev20241112", (true, true), false, "mps:0")),
        &["arm64"],
    );
    let r = Report::new(
        mac(true, "15.1"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![nightly],
    );
    let note = r
        .notes
        .iter()
        .find(|n| n.contains("nightly"))
        .unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(
        note.contains("2024-11-12") && note.contains("pip install torch==2.11.0"),
        "{note}"
    );
    let release = python(
        "arm64",
        Some(torch("2.11.0", (true, true), false, "mps:0")),
        &["arm64"],
    );
    let r = Report::new(
        mac(true, "15.1"),
        Conditions::default(),
        Ok(lib(true, 0)),
        vec![release],
    );
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}
