//! Entry points for fuzzing: each takes arbitrary bytes, feeds them to one family of Headroom's
//! parsers, and checks what must hold whatever the input. They must never panic. The cargo-fuzz
//! targets under `fuzz/` call them (coverage-guided, nightly), and a stable test replays the
//! corpus kept in `fuzz/corpus/` plus the captured fixtures through them on every test run.

use crate::budget::{parse_bytes, BudgetSpec};
use crate::protocol::{parse_batches, parse_shape, Event, Job};
use crate::readiness::{linux, macos, python};
use crate::remote::{self, HostProfile};
use crate::{config, contention, gpu_busy, machine, mlx, mounts, readings, scriptsweep, sysmem};

/// The fuzz targets, by name (the folder names under `fuzz/corpus/`).
pub const TARGETS: [&str; 5] = ["protocol", "config", "macos", "linux", "sshconfig"];

/// Runs the target `name` on `data`; `false` for an unknown name.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "protocol" => protocol(data),
        "config" => config_files(data),
        "macos" => macos_outputs(data),
        "linux" => linux_outputs(data),
        "sshconfig" => ssh_config(data),
        _ => return false,
    }
    true
}

fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// The worker protocol and the command-line values that become a request: every line a worker
/// could write, every request a parent could send. What parses must survive a round trip.
pub fn protocol(data: &[u8]) {
    let t = text(data);
    for line in t.lines() {
        if let Ok(e) = Event::from_line(line) {
            let again = Event::from_line(&e.to_line());
            assert!(again.is_ok(), "an event does not read back: {line:?}");
        }
        if let Ok(j) = Job::from_line(line) {
            let json = serde_json::to_string(&j).expect("a job serialises");
            assert_eq!(
                Job::from_line(&json).ok(),
                Some(j),
                "a job does not round-trip"
            );
        }
        if let Ok(b) = parse_batches(line) {
            assert!(b.windows(2).all(|w| w[0] < w[1]) && b.iter().all(|x| *x > 0));
        }
        if let Ok(s) = parse_shape(line) {
            assert!(s.iter().all(|d| *d > 0));
        }
        let _ = BudgetSpec::parse(line);
        let _ = parse_bytes(line);
        let _ = remote::rtt::parse_target(line);
        let _ = scriptsweep::parse_axis(line);
        let _ = crate::failure::classify(line);
        let _ = crate::failure::headline(line);
        let _ = readings::fallback_op(line);
        let _ = readings::mps_op_gpu_ms(line);
        let _ = crate::jobs::watch::is_step_marker(line);
        let _ = crate::jobs::watch::is_data_marker(line);
    }
    let args: Vec<String> = t.split_whitespace().map(str::to_owned).collect();
    let _ = readings::batch_from_args(&args);
}

/// `config.toml` and `hosts.toml`: whatever the text, a clear error or a config that passes its
/// own checks and writes back to the same config.
pub fn config_files(data: &[u8]) {
    let t = text(data);
    if let Ok(c) = config::parse(&t) {
        if c.check().is_ok() {
            let back = config::parse(&c.to_toml());
            assert_eq!(back.ok(), Some(c), "a valid config does not round-trip");
        }
    }
    if let Ok(hosts) = remote::Hosts::parse(&t, std::path::Path::new("hosts.toml")) {
        for p in hosts.list() {
            assert!(p.validate().is_ok(), "a loaded profile fails validation");
        }
    }
}

/// Every macOS command output Headroom reads (`pmset`, `vm_stat`, `memory_pressure`, `sysctl`,
/// `ioreg`, `system_profiler`, `file`/`lipo`, PyTorch's MPS messages) and `proc_pid_rusage`'s
/// buffer.
pub fn macos_outputs(data: &[u8]) {
    let t = text(data);
    let _ = macos::parse_colon_pairs(&t);
    let _ = macos::parse_proc_translated(&t);
    let _ = macos::parse_lipo_archs(&t);
    let _ = macos::parse_file_archs(&t, None);
    let _ = macos::parse_file_archs(&t, Some("/usr/bin/python3"));
    let _ = macos::parse_pmset_batt(&t);
    let _ = macos::parse_pmset_low_power(&t);
    let _ = macos::parse_pmset_therm(&t);
    let _ = macos::parse_system_profiler_json(&t);
    let _ = macos::parse_system_profiler_text(&t);
    let _ = macos::parse_version(&t);
    let _ = sysmem::parse_vm_stat_available(&t);
    let _ = contention::parse_vm_pressure_level(&t);
    if let Some(free) = contention::parse_memory_pressure_free(&t) {
        assert!(free <= 100, "a free share above 100 %");
    }
    let _ = contention::parse_swapusage_used(&t);
    let _ = gpu_busy::parse_ioreg_device_utilization(&t);
    let _ = sysmem::parse_rusage_info_v2(data);
    let _ = python::parse_probe_output(&t);
    let _ = python::parse_torch_version_line(&t);
    let _ = mlx::parse_output(&t);
}

/// Every Linux file and command output Headroom reads (`/proc`, `os-release`, `nvidia-smi`,
/// mountinfo) and the remote probe's answer.
pub fn linux_outputs(data: &[u8]) {
    let t = text(data);
    let _ = linux::parse_os_release(&t);
    let _ = linux::parse_nvidia_smi_csv(&t);
    let _ = sysmem::parse_meminfo(&t);
    let _ = sysmem::parse_proc_status(&t);
    let _ = sysmem::parse_smaps_rollup_pss(&t);
    let _ = contention::parse_psi(&t);
    let _ = contention::parse_meminfo_swap_used(&t);
    let _ = machine::parse_cpuinfo_model(&t);
    let _ = machine::parse_nvidia_information(&t);
    for line in t.lines() {
        let _ = gpu_busy::parse_nvidia_smi_utilization(line);
    }
    let _ = mounts::parse_mountinfo(&t, std::path::Path::new("/home/ada/.headroom"));
    let _ = mounts::parse_mountinfo(&t, std::path::Path::new("/"));
    let _ = remote::check::parse_probe(&t);
}

/// The ssh-config editor and host-profile validation: the fields of a profile come from the
/// input (split at NUL bytes); whatever validates must render to a managed file where the profile
/// is one `Host` block of known keywords only — no field can add a line or a directive.
pub fn ssh_config(data: &[u8]) {
    let t = text(data);
    let mut f = t.split('\0');
    let mut next = || f.next().map(str::to_owned);
    let opt = |v: Option<String>| v.filter(|s| !s.is_empty());
    let p = HostProfile {
        name: next().unwrap_or_default(),
        host: next().unwrap_or_default(),
        port: next().and_then(|s| s.parse().ok()),
        user: opt(next()),
        identity: opt(next()),
        jump: opt(next()),
        vnc_port: next().and_then(|s| s.parse().ok()).unwrap_or(5900),
        headroom_path: opt(next()),
        notes: next().unwrap_or_default(),
        artifact_store: opt(next()),
    };
    if p.validate().is_err() {
        return;
    }
    one_block(&p);
    let _ = p.target();
}

/// Panics unless `p` renders to one `Host` block of known keywords, one per line.
pub fn one_block(p: &HostProfile) {
    let managed = remote::sshconfig::render([p]);
    let body: Vec<&str> = managed
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    let hosts = body.iter().filter(|l| l.starts_with("Host ")).count();
    assert_eq!(
        hosts, 1,
        "one profile rendered {hosts} Host lines:\n{managed}"
    );
    for l in &body[1..] {
        let key = l.split_whitespace().next().unwrap_or("");
        assert!(
            l.starts_with("    ")
                && matches!(
                    key,
                    "HostName" | "Port" | "User" | "IdentityFile" | "IdentitiesOnly" | "ProxyJump"
                ),
            "a field made its own line {l:?} in:\n{managed}"
        );
    }
}
