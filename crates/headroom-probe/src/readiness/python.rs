//! Finding the Python interpreters a researcher may train with, and asking each, by running it,
//! what it is: its architecture, torch and what torch can use, and MLX.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::child::{run_captured, Captured};

/// The script each interpreter runs.
pub const PROBE_SCRIPT: &str = include_str!("probe.py");
const PROBE_MARKER: &str = "HEADROOM-PROBE ";

/// An interpreter to probe and where it was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub path: PathBuf,
    /// Where it came from: `--python`, `VIRTUAL_ENV`, `CONDA_PREFIX`, `project .venv`, `PATH`,
    /// `conda env`, `pyenv`, `uv`, `homebrew`, `system`.
    pub source: String,
    /// Named by the user or the environment, so its absence is worth reporting.
    pub explicit: bool,
}

/// What discovery looks at; [`DiscoveryEnv::from_process`] fills it from this process.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryEnv {
    pub path: Option<OsString>,
    pub virtual_env: Option<PathBuf>,
    pub conda_prefix: Option<PathBuf>,
    pub pyenv_root: Option<PathBuf>,
    pub home: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    /// `--python PATH` arguments, probed first.
    pub extra: Vec<PathBuf>,
    /// The projects' Pythons (`headroom project add --python`), by project: probed right after
    /// `--python`, so doctor judges the interpreter the user trains with.
    pub projects: Vec<(String, PathBuf)>,
    /// Look in the well-known system places (Homebrew, /usr/bin).
    pub system: bool,
}

impl DiscoveryEnv {
    pub fn from_process(extra: Vec<PathBuf>) -> Self {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Self {
            path: std::env::var_os("PATH"),
            virtual_env: var("VIRTUAL_ENV"),
            conda_prefix: var("CONDA_PREFIX"),
            pyenv_root: var("PYENV_ROOT"),
            home: dirs::home_dir(),
            cwd: std::env::current_dir().ok(),
            extra,
            projects: Vec::new(),
            system: true,
        }
    }
}

/// The most candidates probed; more would make doctor slow without telling more.
pub const MAX_CANDIDATES: usize = 24;

/// The interpreters to probe, most relevant first: `--python`, the active virtualenv and conda
/// env, a `.venv` of the current project, `python3`/`python` on PATH, conda/mamba envs, pyenv
/// versions, uv-managed Pythons, then Homebrew's and the system's. The same interpreter in the
/// same environment is listed once.
pub fn discover(env: &DiscoveryEnv) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let mut seen: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut add = |path: PathBuf, source: &str, explicit: bool| {
        if out.len() >= MAX_CANDIDATES {
            return;
        }
        if !path.is_file() {
            if explicit {
                out.push(Candidate {
                    path,
                    source: source.into(),
                    explicit,
                });
            }
            return;
        }
        // Two links in one bin/ to one binary are one environment; the same binary linked from
        // another environment's bin/ is another (its site-packages differ).
        let dir = path
            .parent()
            .and_then(|d| d.canonicalize().ok())
            .unwrap_or_default();
        let target = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.contains(&(dir.clone(), target.clone())) {
            return;
        }
        seen.push((dir, target));
        out.push(Candidate {
            path,
            source: source.into(),
            explicit,
        });
    };
    let in_env = |root: &Path| {
        ["bin/python3", "bin/python"]
            .iter()
            .map(|b| root.join(b))
            .find(|p| p.is_file())
            .unwrap_or_else(|| root.join("bin/python"))
    };
    for p in &env.extra {
        add(p.clone(), "--python", true);
    }
    for (name, p) in &env.projects {
        add(p.clone(), &format!("project {name}"), true);
    }
    if let Some(v) = &env.virtual_env {
        add(in_env(v), "VIRTUAL_ENV", true);
    }
    if let Some(c) = &env.conda_prefix {
        add(in_env(c), "CONDA_PREFIX", true);
    }
    if let Some(cwd) = &env.cwd {
        for dir in cwd.ancestors().take(6) {
            let venv = dir.join(".venv");
            if venv.join("pyvenv.cfg").is_file() {
                add(in_env(&venv), "project .venv", false);
                break;
            }
        }
    }
    if let Some(path) = &env.path {
        for name in ["python3", "python"] {
            if let Some(found) = std::env::split_paths(path)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
            {
                add(found, "PATH", false);
            }
        }
    }
    if let Some(home) = &env.home {
        for env_dir in conda_envs(home) {
            add(in_env(&env_dir), "conda env", false);
        }
        let pyenv = env
            .pyenv_root
            .clone()
            .unwrap_or_else(|| home.join(".pyenv"));
        for v in sorted_dirs(&pyenv.join("versions")) {
            add(in_env(&v), "pyenv", false);
        }
        for v in sorted_dirs(&home.join(".local/share/uv/python")) {
            add(in_env(&v), "uv", false);
        }
    }
    if env.system {
        for (p, source) in [
            ("/opt/homebrew/bin/python3", "homebrew"),
            ("/usr/local/bin/python3", "homebrew (x86_64 prefix)"),
            ("/usr/bin/python3", "system"),
        ] {
            add(PathBuf::from(p), source, false);
        }
    }
    out
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Conda/mamba environments: those listed in `~/.conda/environments.txt`, and the base and
/// `envs/*` of the usual install roots.
fn conda_envs(home: &Path) -> Vec<PathBuf> {
    let mut envs: Vec<PathBuf> = std::fs::read_to_string(home.join(".conda/environments.txt"))
        .map(|t| {
            t.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    let mut roots: Vec<PathBuf> = [
        "miniforge3",
        "mambaforge",
        "miniconda3",
        "anaconda3",
        "micromamba",
        ".local/share/mamba",
    ]
    .iter()
    .map(|r| home.join(r))
    .collect();
    roots.push(PathBuf::from("/opt/homebrew/Caskroom/miniforge/base"));
    roots.push(PathBuf::from("/opt/miniconda3"));
    for root in roots {
        if root.is_dir() {
            envs.push(root.clone());
            envs.extend(sorted_dirs(&root.join("envs")));
        }
    }
    let mut unique = Vec::new();
    for e in envs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    unique
}

/// torch as one interpreter sees it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TorchFacts {
    pub version: String,
    pub cuda_version: Option<String>,
    pub mps_built: bool,
    pub mps_available: bool,
    pub cuda_available: bool,
    #[serde(default)]
    pub cuda_devices: Vec<String>,
    /// Where a 64×64 matmul on the best available device put its result (`mps:0`, `cuda:0`, `cpu`).
    pub matmul_device: Option<String>,
    pub matmul_error: Option<String>,
}

/// MLX as one interpreter sees it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlxFacts {
    pub version: Option<String>,
    pub default_device: String,
}

/// What the probe script printed.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonFacts {
    pub executable: String,
    pub version: String,
    pub implementation: String,
    /// `platform.machine()`: `x86_64` in a Python translated by Rosetta on Apple Silicon.
    pub machine: String,
    pub platform: String,
    pub prefix: String,
    pub in_venv: bool,
    pub torch: Option<TorchFacts>,
    pub torch_error: Option<String>,
    pub mlx: Option<MlxFacts>,
    pub mlx_error: Option<String>,
}

/// How probing one interpreter ended.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeStatus {
    Ok,
    NotFound,
    TimedOut,
    Crashed,
    Failed,
}

/// One interpreter's report.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonReport {
    pub path: String,
    pub source: String,
    /// Named by `--python` or the active environment.
    #[serde(default)]
    pub explicit: bool,
    pub status: ProbeStatus,
    /// What went wrong and what to do, when status is not `ok`.
    pub error: Option<String>,
    /// The architectures in the interpreter's binary (`x86_64` only on Apple Silicon means it
    /// can only run under Rosetta); empty when unknown.
    #[serde(default)]
    pub binary_archs: Vec<String>,
    pub facts: Option<PythonFacts>,
    pub seconds: f64,
}

/// Finds the probe's line in an interpreter's stdout.
pub fn parse_probe_output(stdout: &str) -> Option<PythonFacts> {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(PROBE_MARKER))
        .and_then(|j| serde_json::from_str(j).ok())
}

/// Runs the probe in `candidate` for at most `timeout`; a hang is killed and reported, a crash
/// is reported with its signal, never propagated.
pub fn probe(candidate: &Candidate, timeout: Duration) -> PythonReport {
    // Its time as the limit counts it: a hold of background work is not the interpreter's.
    let started = crate::child::Stopwatch::for_this_thread();
    let mut report = PythonReport {
        path: candidate.path.display().to_string(),
        source: candidate.source.clone(),
        explicit: candidate.explicit,
        status: ProbeStatus::Failed,
        error: None,
        binary_archs: super::system::binary_archs(&candidate.path),
        facts: None,
        seconds: 0.0,
    };
    let finish = |mut r: PythonReport| {
        r.seconds = started.elapsed().as_secs_f64();
        r
    };
    if !candidate.path.exists() {
        report.status = ProbeStatus::NotFound;
        report.error = Some(format!(
            "{} does not exist (from {}); check the path, or pass the interpreter you train with as --python PATH",
            candidate.path.display(),
            candidate.source
        ));
        return finish(report);
    }
    let mut cmd = Command::new(&candidate.path);
    cmd.arg("-c").arg(PROBE_SCRIPT);
    let (status, stdout, stderr) = match run_captured(&mut cmd, timeout) {
        Ok(done) => done,
        Err(Captured::Spawn(e)) => {
            report.error = Some(format!(
                "cannot run {}: {e}; is it an executable Python interpreter?",
                candidate.path.display()
            ));
            return finish(report);
        }
        Err(Captured::TimedOut) => {
            report.status = ProbeStatus::TimedOut;
            report.error = Some(format!(
                "did not answer within {:.0} s and was stopped; run `{} -c 'import torch'` by hand to see where it hangs, or raise --timeout",
                timeout.as_secs_f64(),
                candidate.path.display()
            ));
            return finish(report);
        }
    };
    let tail = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_owned();
    if let Some(facts) = parse_probe_output(&stdout) {
        report.status = ProbeStatus::Ok;
        report.facts = Some(facts);
        return finish(report);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            report.status = ProbeStatus::Crashed;
            report.error = Some(format!(
                "crashed (signal {sig}) while importing or running torch{}; reinstall torch in that environment",
                if tail.is_empty() { String::new() } else { format!(": {tail}") }
            ));
            return finish(report);
        }
    }
    report.error = Some(format!(
        "exited with {status} without a report{}; is it Python 3?",
        if tail.is_empty() {
            String::new()
        } else {
            format!(" ({tail})")
        }
    ));
    finish(report)
}

/// Probes every candidate, `parallel` at a time, keeping their order.
pub fn probe_all(
    candidates: &[Candidate],
    timeout: Duration,
    parallel: usize,
) -> Vec<PythonReport> {
    let mut reports = Vec::with_capacity(candidates.len());
    for chunk in candidates.chunks(parallel.max(1)) {
        let handles: Vec<_> = chunk
            .iter()
            .cloned()
            .map(|c| crate::child::spawn_alike(move || probe(&c, timeout)))
            .collect();
        for (h, c) in handles.into_iter().zip(chunk) {
            reports.push(h.join().unwrap_or_else(|_| PythonReport {
                path: c.path.display().to_string(),
                source: c.source.clone(),
                explicit: c.explicit,
                status: ProbeStatus::Failed,
                error: Some("the probe thread panicked".into()),
                binary_archs: Vec::new(),
                facts: None,
                seconds: 0.0,
            }));
        }
    }
    reports
}

pub use headroom_model::samples::PythonTorch;

const TORCH_VERSION_SCRIPT: &str = "import importlib.metadata as m\n\
try:\n    print('headroom-torch=' + m.version('torch'))\n\
except m.PackageNotFoundError:\n    print('headroom-torch=')\n";

/// The torch version line of the version script's output: `Some(None)` when it says none
/// is installed, `None` when the line is missing.
pub fn parse_torch_version_line(stdout: &str) -> Option<Option<String>> {
    stdout.lines().find_map(|l| {
        let v = l.trim().strip_prefix("headroom-torch=")?;
        Some((!v.is_empty()).then(|| v.to_owned()))
    })
}

/// The Python a run of the user's code would use: `HEADROOM_PYTHON`, else the first interpreter
/// discovery finds (the active virtualenv or conda env, the project's `.venv`, PATH, …).
pub fn users_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HEADROOM_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    discover(&DiscoveryEnv::from_process(Vec::new()))
        .into_iter()
        .map(|c| c.path)
        .find(|p| p.is_file())
}

/// The torch of [`users_python`]; `None` (unknown) when there is no Python or it did not answer
/// within `timeout`.
pub fn users_torch(timeout: Duration) -> Option<PythonTorch> {
    let python = users_python()?;
    let mut cmd = Command::new(&python);
    cmd.args(["-c", TORCH_VERSION_SCRIPT]);
    let (status, out, _) = run_captured(&mut cmd, timeout).ok()?;
    if !status.success() {
        return None;
    }
    Some(PythonTorch {
        python: python.display().to_string(),
        torch: parse_torch_version_line(&out)?,
    })
}
