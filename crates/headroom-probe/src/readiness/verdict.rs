//! From facts to a traffic light per backend, each with its reason in one line and, when it is
//! not green, the fix. Pure: tested with facts built by hand and with facts from real runs.

use serde::{Deserialize, Serialize};

use super::isolation;
use super::{LibtorchFacts, PowerSource, PythonReport, Report, TorchFacts};

/// A light's colour. `Off` means not applicable here (MPS on Linux) or optional and absent.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LightState {
    Green,
    Yellow,
    Red,
    Off,
}

impl LightState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Green => "green",
            Self::Yellow => "yellow",
            Self::Red => "red",
            Self::Off => "off",
        }
    }
}

/// One backend's light.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Light {
    /// `cpu`, `mps`, `cuda`, `mlx`, or `conditions` (what skews measurements).
    pub backend: String,
    pub state: LightState,
    pub reason: String,
    pub fix: Option<String>,
}

fn light(backend: &str, state: LightState, reason: String, fix: Option<String>) -> Light {
    Light {
        backend: backend.into(),
        state,
        reason,
        fix,
    }
}

/// The version without its local part: `2.11.0+cu130` → `2.11.0`.
fn base_version(v: &str) -> &str {
    v.split('+').next().unwrap_or(v).trim()
}

/// What a torch version says of its build (PEP 440): a nightly (`2.6.0.dev20241112`), a
/// pre-release (`2.5.0rc1`, `2.5.0a0`, `2.4.0b2`) or a release; a local part (`+cu130`,
/// `+git8a7b`) is not part of the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TorchBuild {
    Release,
    /// `.devN`: a nightly (N is its date) or an unreleased source build.
    Nightly(String),
    /// `aN`, `bN`, `rcN` (and PEP 440's spellings `alpha`, `beta`, `c`, `pre`, `preview`).
    PreRelease(String),
}

pub fn torch_build(version: &str) -> TorchBuild {
    let v = base_version(version).to_ascii_lowercase();
    if let Some(i) = v.find("dev") {
        let n: String = v[i + 3..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        return TorchBuild::Nightly(n);
    }
    // The release part is digits and dots; whatever letters follow it name a pre-release.
    let release_end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let rest = v[release_end..].trim_start_matches(['.', '-', '_']);
    let tag: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
    match tag.as_str() {
        "a" | "alpha" | "b" | "beta" | "c" | "rc" | "pre" | "preview" => {
            TorchBuild::PreRelease(rest.to_owned())
        }
        _ => TorchBuild::Release,
    }
}

fn macos_version(r: &Report) -> Option<(u32, u32, u32)> {
    r.machine
        .os_version
        .as_deref()
        .and_then(super::macos::parse_version)
}

/// The interpreter runs translated by Rosetta: an x86_64 Python on Apple Silicon.
pub fn under_rosetta(r: &Report, p: &PythonReport) -> bool {
    r.machine.apple_silicon
        && p.facts
            .as_ref()
            .is_some_and(|f| f.machine == "x86_64" || f.machine == "i386")
}

fn lib_checks<'a>(
    lib: &'a LibtorchFacts,
    prefix: &'a str,
) -> impl Iterator<Item = &'a super::DeviceCheck> {
    lib.devices
        .iter()
        .filter(move |d| d.device.starts_with(prefix))
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "?".into(), |m| format!("{m:.2} ms"))
}

const NAME_IT: &str = "pass the interpreter you train with as --python PATH";

/// The primary interpreter and its torch, or the light that says why there is none.
fn primary_torch<'a>(
    r: &'a Report,
    backend: &str,
) -> Result<(&'a PythonReport, &'a TorchFacts), Light> {
    let Some(p) = r.primary_python() else {
        let why = r
            .pythons
            .iter()
            .find_map(|p| p.error.clone())
            .unwrap_or_else(|| "none was found on PATH or in the usual places".into());
        return Err(light(
            backend,
            LightState::Yellow,
            format!("no Python interpreter could be asked: {why}"),
            Some(NAME_IT.into()),
        ));
    };
    let facts = p.facts.as_ref().ok_or_else(|| {
        light(
            backend,
            LightState::Yellow,
            "the primary Python did not report".into(),
            Some(NAME_IT.into()),
        )
    })?;
    match &facts.torch {
        Some(t) => Ok((p, t)),
        None => Err(light(
            backend,
            LightState::Yellow,
            format!(
                "{} (Python {}) has no torch: {}",
                p.path,
                facts.version,
                facts.torch_error.as_deref().unwrap_or("import failed")
            ),
            Some(format!(
                "`{} -m pip install torch` in the environment you train with, or {NAME_IT}",
                p.path
            )),
        )),
    }
}

fn cpu_light(r: &Report) -> Light {
    let lib_ok = match (&r.libtorch, &r.libtorch_error) {
        (Some(lib), _) => match lib_checks(lib, "cpu").next() {
            Some(c) if c.matmul_ok => Ok(format!(
                "Headroom's libtorch {} ran a 512×512 matmul in {}",
                lib.version,
                ms(c.matmul_ms)
            )),
            Some(c) => Err(c
                .error
                .clone()
                .unwrap_or_else(|| "the matmul failed".into())),
            None => Err("it reported no CPU device".into()),
        },
        (None, e) => Err(e.clone().unwrap_or_else(|| "it did not answer".into())),
    };
    let lib_line = match lib_ok {
        Ok(l) => l,
        Err(e) => {
            return light(
                "cpu",
                LightState::Red,
                format!("Headroom's own libtorch failed on the CPU: {e}"),
                Some("rebuild Headroom with `bash scripts/bootstrap.sh` (it installs torch 2.11.0 and links against it)".into()),
            )
        }
    };
    let (p, t) = match primary_torch(r, "cpu") {
        Ok(pt) => pt,
        Err(mut l) => {
            l.reason = format!("{}; {lib_line}", l.reason);
            return l;
        }
    };
    if let (Some(e), true) = (&t.matmul_error, t.matmul_device.is_none()) {
        if !(t.mps_available || t.cuda_available) {
            return light(
                "cpu",
                LightState::Red,
                format!(
                    "torch {} in {} failed a matmul on the CPU: {e}",
                    t.version, p.path
                ),
                Some(format!(
                    "reinstall torch: `{} -m pip install --force-reinstall torch`",
                    p.path
                )),
            );
        }
    }
    light(
        "cpu",
        LightState::Green,
        format!("torch {} in {}; {lib_line}", t.version, p.path),
        None,
    )
}

fn mps_light(r: &Report) -> Light {
    let off = |why: String| light("mps", LightState::Off, why, None);
    if r.machine.os != "macos" {
        let os = r.machine.os_name.as_deref().unwrap_or(&r.machine.os);
        // In a container or VM the question is a gate of its own: on a Mac, Docker Desktop,
        // Colima and Lima run Linux in a VM that gets no Metal.
        if let Some(inside) = r
            .machine
            .isolation
            .as_ref()
            .and_then(isolation::Isolation::describe)
        {
            return off(format!(
                "this {os} runs in {inside}: MPS does not exist there, even on a Mac (a Linux VM — Docker Desktop, Colima, Lima — gets no Metal); to use the Mac's GPU, run on macOS itself with an arm64 Python"
            ));
        }
        return off(format!(
            "MPS is Apple's Metal backend; this machine runs {os}"
        ));
    }
    if !r.machine.apple_silicon {
        return off("this Mac has an Intel CPU; PyTorch's MPS builds target Apple Silicon".into());
    }
    let version = macos_version(r);
    if let Some(v) = version.filter(|v| *v < (12, 3, 0)) {
        return light(
            "mps",
            LightState::Red,
            format!(
                "macOS {}.{}: PyTorch's MPS backend needs macOS 12.3 or later",
                v.0, v.1
            ),
            Some("update macOS (14 or later also gives bf16 on MPS)".into()),
        );
    }
    if let Some(p) = r.primary_python().filter(|p| under_rosetta(r, p)) {
        let only_x86 = p
            .binary_archs
            .iter()
            .all(|a| a.starts_with("x86_64") || a == "i386")
            && !p.binary_archs.is_empty();
        return light(
            "mps",
            LightState::Red,
            format!(
                "{} is an x86_64 Python running under Rosetta, where MPS is not available{}",
                p.path,
                if only_x86 { " (its binary holds only x86_64 code)" } else { " (its binary is universal but was started as x86_64)" }
            ),
            Some("install an arm64 Python (e.g. Miniforge's arm64 installer, or Homebrew's /opt/homebrew/bin/python3) and reinstall torch there; `python -c 'import platform; print(platform.machine())'` must print arm64".into()),
        );
    }
    let (p, t) = match primary_torch(r, "mps") {
        Ok(pt) => pt,
        Err(l) => return l,
    };
    if !t.mps_built {
        return light(
            "mps",
            LightState::Red,
            format!("torch {} in {} was built without MPS", t.version, p.path),
            Some(format!(
                "install PyPI's macOS arm64 wheel: `{} -m pip install --upgrade torch`",
                p.path
            )),
        );
    }
    if !t.mps_available {
        let why = if r.machine.sandboxed {
            "inside the App Sandbox"
        } else if r.machine.translated == Some(true) {
            "Headroom itself runs under Rosetta"
        } else {
            "usually a virtual machine, or a macOS too old for this torch"
        };
        return light(
            "mps",
            LightState::Red,
            format!(
                "torch {} has MPS built in but MPS is not available here ({why})",
                t.version
            ),
            Some("run natively on macOS 14 or later, not in a VM".into()),
        );
    }
    match t.matmul_device.as_deref() {
        Some(d) if d.starts_with("mps") => {}
        other => {
            return light(
                "mps",
                LightState::Red,
                format!(
                    "MPS reports available but the test matmul did not run on it ({})",
                    t.matmul_error.as_deref().or(other).unwrap_or("no result")
                ),
                Some(
                    "update torch and macOS; report the error with `headroom doctor --json`".into(),
                ),
            )
        }
    }
    let lib_mps = r
        .libtorch
        .as_ref()
        .and_then(|l| lib_checks(l, "mps").next());
    match lib_mps {
        Some(c) if c.matmul_ok => {}
        _ => {
            let why = if r.machine.translated == Some(true) {
                "Headroom runs under Rosetta".to_owned()
            } else {
                lib_mps
                    .and_then(|c| c.error.clone())
                    .unwrap_or_else(|| "its libtorch reports no MPS".into())
            };
            return light(
                "mps",
                LightState::Yellow,
                format!("torch {} in {} can use MPS, but Headroom's own libtorch cannot ({why}): its sweeps would run on the CPU", t.version, p.path),
                Some("install Headroom's arm64 build".into()),
            );
        }
    }
    if let Some(v) = version.filter(|v| *v < (14, 0, 0)) {
        return light(
            "mps",
            LightState::Yellow,
            format!(
                "MPS works (torch {} ran a matmul on mps), but macOS {}.{} has no bf16 on MPS",
                t.version, v.0, v.1
            ),
            Some("update to macOS 14 or later for bf16".into()),
        );
    }
    let lib_ms = lib_mps.and_then(|c| c.matmul_ms);
    light(
        "mps",
        LightState::Green,
        format!(
            "torch {} in {} ran a matmul on mps; Headroom's libtorch ran one in {}",
            t.version,
            p.path,
            ms(lib_ms)
        ),
        None,
    )
}

fn nvidia_present(r: &Report) -> bool {
    r.machine
        .gpus
        .iter()
        .any(|g| g.name.contains("NVIDIA") || g.source == "nvidia-smi" || g.source == "nvml")
        || r.libtorch.as_ref().is_some_and(|l| l.cuda_devices > 0)
        || r.pythons.iter().any(|p| {
            p.facts
                .as_ref()
                .and_then(|f| f.torch.as_ref())
                .is_some_and(|t| t.cuda_available)
        })
}

fn cuda_light(r: &Report) -> Option<Light> {
    if !nvidia_present(r) {
        return None;
    }
    let gpu = r
        .machine
        .gpus
        .first()
        .map_or_else(|| "an NVIDIA GPU".to_owned(), |g| g.name.clone());
    let Some(lib) = &r.libtorch else {
        return Some(light(
            "cuda",
            LightState::Red,
            format!(
                "{gpu} is here but Headroom's libtorch did not answer: {}",
                r.libtorch_error.as_deref().unwrap_or("?")
            ),
            Some("rebuild with `bash scripts/bootstrap.sh`".into()),
        ));
    };
    if lib.cuda_devices == 0 {
        return Some(light(
            "cuda",
            LightState::Red,
            format!("{gpu} is here but Headroom's libtorch sees no CUDA device"),
            Some("check that `nvidia-smi` works and CUDA_VISIBLE_DEVICES is not empty; the bootstrap links libtorch_cuda".into()),
        ));
    }
    if let Some(bad) = lib_checks(lib, "cuda").find(|c| !c.matmul_ok) {
        return Some(light(
            "cuda",
            LightState::Red,
            format!(
                "Headroom's libtorch failed a matmul on {}: {}",
                bad.device,
                bad.error.as_deref().unwrap_or("?")
            ),
            Some(
                "check the driver with `nvidia-smi`; another process may hold all GPU memory"
                    .into(),
            ),
        ));
    }
    let lib_line = {
        let checks: Vec<_> = lib_checks(lib, "cuda").collect();
        format!(
            "Headroom's libtorch ran a matmul on {} device{} ({}) in {}",
            checks.len(),
            if checks.len() == 1 { "" } else { "s" },
            checks.first().map_or("?", |c| c.name.as_str()),
            ms(checks.first().and_then(|c| c.matmul_ms))
        )
    };
    let (p, t) = match primary_torch(r, "cuda") {
        Ok(pt) => pt,
        Err(mut l) => {
            l.reason = format!("{}; {lib_line}", l.reason);
            return Some(l);
        }
    };
    if !t.cuda_available {
        let cpu_only = t.version.contains("+cpu") || t.cuda_version.is_none();
        return Some(light(
            "cuda",
            LightState::Red,
            format!(
                "torch {} in {} cannot use CUDA{}",
                t.version,
                p.path,
                if cpu_only { " (a CPU-only build)" } else { " (its CUDA runtime does not match the driver, or no device is visible)" }
            ),
            Some(format!("install a CUDA build: `{} -m pip install --force-reinstall torch` (PyPI's default Linux wheel includes CUDA)", p.path)),
        ));
    }
    if !t
        .matmul_device
        .as_deref()
        .is_some_and(|d| d.starts_with("cuda"))
    {
        return Some(light(
            "cuda",
            LightState::Red,
            format!(
                "CUDA reports available but the test matmul failed: {}",
                t.matmul_error.as_deref().unwrap_or("no result")
            ),
            Some("check `nvidia-smi` for a device in a bad state or out of memory".into()),
        ));
    }
    Some(light(
        "cuda",
        LightState::Green,
        format!(
            "torch {} (CUDA {}) in {} ran a matmul on {}; {lib_line}",
            t.version,
            t.cuda_version.as_deref().unwrap_or("?"),
            p.path,
            t.matmul_device.as_deref().unwrap_or("cuda")
        ),
        None,
    ))
}

fn mlx_light(r: &Report) -> Light {
    let mut with_mlx = r
        .pythons
        .iter()
        .filter_map(|p| Some((p, p.facts.as_ref()?.mlx.as_ref()?)));
    let primary_path = r.primary_python().map(|p| p.path.as_str());
    let found = with_mlx
        .clone()
        .find(|(p, _)| Some(p.path.as_str()) == primary_path)
        .or_else(|| with_mlx.next());
    if let Some((p, m)) = found {
        return light(
            "mlx",
            LightState::Green,
            format!(
                "mlx {} in {}, default device {}",
                m.version.as_deref().unwrap_or("?"),
                p.path,
                m.default_device
            ),
            None,
        );
    }
    let apple = r.machine.os == "macos" && r.machine.apple_silicon;
    if let Some(p) = r.primary_python().filter(|p| apple && under_rosetta(r, p)) {
        return light(
            "mlx",
            LightState::Red,
            format!(
                "MLX needs a native arm64 Python; {} runs under Rosetta",
                p.path
            ),
            Some("install an arm64 Python, then `pip install mlx` in it".into()),
        );
    }
    if apple {
        light(
            "mlx",
            LightState::Off,
            "mlx is not installed in any Python found".into(),
            Some(
                "`pip install mlx` in an arm64 Python (macOS 13.5 or later) to compare it with MPS"
                    .into(),
            ),
        )
    } else {
        light(
            "mlx",
            LightState::Off,
            "mlx is not installed in any Python found (MLX targets Apple Silicon; on Linux it runs on the CPU or CUDA only)".into(),
            None,
        )
    }
}

fn conditions_light(r: &Report) -> Light {
    let c = &r.conditions;
    let mac = r.machine.os == "macos";
    let mut warnings: Vec<(String, String)> = Vec::new();
    if c.power_source == Some(PowerSource::Battery) {
        let b = c.battery.as_ref();
        warnings.push((
            format!(
                "on battery{}: the OS lowers CPU and GPU clocks on battery",
                b.and_then(|b| b.percent)
                    .map(|p| format!(" ({p}%)"))
                    .unwrap_or_default()
            ),
            "plug in before measuring".into(),
        ));
    }
    if c.low_power_mode == Some(true) {
        warnings.push((
            if mac { "Low Power Mode is on: every figure is throttled".into() } else { "the platform profile is low-power: every figure is throttled".into() },
            if mac { "turn it off in System Settings → Battery, or `sudo pmset -a lowpowermode 0`".into() } else { "`powerprofilesctl set balanced` (or write `balanced` to /sys/firmware/acpi/platform_profile)".into() },
        ));
    }
    if !c.thermal_warnings.is_empty() {
        warnings.push((
            format!("thermal pressure: {}", c.thermal_warnings.join("; ")),
            "let the machine cool and close other heavy work before measuring".into(),
        ));
    }
    if !warnings.is_empty() {
        let reason = warnings
            .iter()
            .map(|(r, _)| r.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        return light(
            "conditions",
            LightState::Yellow,
            reason,
            warnings.into_iter().next().map(|(_, f)| f),
        );
    }
    let mut known = Vec::new();
    match c.power_source {
        Some(PowerSource::Ac) => known.push("on AC power".to_owned()),
        Some(PowerSource::Ups) => known.push("on UPS power".to_owned()),
        _ => {}
    }
    if c.low_power_mode == Some(false) {
        known.push(if mac {
            "Low Power Mode off".into()
        } else {
            "platform profile not low-power".into()
        });
    }
    if c.thermal_exposed {
        known.push("no thermal warning".into());
    }
    if let Some(g) = &c.cpu_governor {
        known.push(format!("CPU governor {g}"));
    }
    if known.is_empty() {
        return light(
            "conditions",
            LightState::Off,
            "this machine exposes no power, Low Power Mode or thermal state (a server or VM): nothing known to skew measurements".into(),
            None,
        );
    }
    light("conditions", LightState::Green, known.join(", "), None)
}

/// The lights, in the order people read them: CPU, MPS, CUDA (where present), MLX, conditions.
pub fn lights(r: &Report) -> Vec<Light> {
    let mut v = vec![cpu_light(r), mps_light(r)];
    v.extend(cuda_light(r));
    v.push(mlx_light(r));
    v.push(conditions_light(r));
    v
}

/// Lines worth saying that are not lights: version drift between the user's torch and
/// Headroom's libtorch, and Headroom itself running translated.
pub fn notes(r: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(lib) = &r.libtorch {
        for p in &r.pythons {
            let Some(t) = p.facts.as_ref().and_then(|f| f.torch.as_ref()) else {
                continue;
            };
            if base_version(&t.version) != base_version(&lib.version) {
                notes.push(format!(
                    "version drift: torch {} in {} differs from Headroom's libtorch {}; Headroom's figures are for {}, yours may differ",
                    t.version, p.path, lib.version, base_version(&lib.version)
                ));
            }
        }
    }
    for p in &r.pythons {
        let Some(t) = p.facts.as_ref().and_then(|f| f.torch.as_ref()) else {
            continue;
        };
        let what = match torch_build(&t.version) {
            TorchBuild::Release => continue,
            TorchBuild::Nightly(date) if date.len() == 8 => format!(
                "a nightly build ({}-{}-{})",
                &date[..4],
                &date[4..6],
                &date[6..]
            ),
            TorchBuild::Nightly(_) => "an unreleased development build".to_owned(),
            TorchBuild::PreRelease(tag) => format!("a pre-release ({tag})"),
        };
        notes.push(format!(
            "torch {} in {} is {what}: its operators, MPS coverage and numerics can change from one day to the next; for work with promises (a deadline, a latency, a result to reproduce) pin a stable release: `{} -m pip install torch=={}`",
            t.version,
            p.path,
            p.path,
            r.libtorch
                .as_ref()
                .map_or("2.11.0", |l| base_version(&l.version))
        ));
    }
    if let Some(iso) = &r.machine.isolation {
        if let Some(inside) = iso.describe() {
            let memory = r.machine.memory_total_bytes.map_or_else(String::new, |b| {
                format!(
                    "; it sees {} of memory, the share of the host's RAM its VM or container was given, held whether the work uses it or not",
                    headroom_model::budget::format_bytes(b)
                )
            });
            notes.push(format!(
                "Headroom runs in {inside} ({}){memory}; figures measured here are this guest's, not the host's",
                iso.evidence.join("; ")
            ));
        }
        if !iso.shared_folders.is_empty() {
            let list: Vec<String> = iso
                .shared_folders
                .iter()
                .map(|f| format!("{} ({})", f.path, f.fs_type))
                .collect();
            notes.push(format!(
                "folders shared from the host pass through the VM's file sharing: {}; data read from them loads several times slower than from the guest's own disk, so keep data sets and checkpoints on the guest's disk (or measure with --data PATH)",
                list.join(", ")
            ));
        }
    }
    if r.machine.translated == Some(true) {
        notes.push(
            "Headroom itself runs under Rosetta (x86_64 on Apple Silicon): install its arm64 build"
                .into(),
        );
    }
    notes
}
