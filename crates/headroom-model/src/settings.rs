//! Settings types: the values come from `config.toml` (read and written by headroom-store's
//! `config`); the types and their defaults live here so that code that only reads the machine
//! (the probes) or only judges facts (headroom-decide) needs no file: contention's process
//! groups and thresholds, and the decision rules' thresholds.

use serde::{Deserialize, Serialize};

/// Which processes count as what, and when memory contention is raised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContentionConfig {
    /// Conferencing apps, matched (case-insensitively) on the process name, the executable's
    /// file name or the outermost `.app` bundle's name; a name matches itself and itself
    /// followed by a space (`Code` matches `Code Helper (Renderer)`).
    pub conferencing: Vec<String>,
    pub ides: Vec<String>,
    pub browsers: Vec<String>,
    /// Local LLM servers (a model kept in memory all day), counted with conferencing and IDEs.
    pub llm_servers: Vec<String>,
    /// Raise contention when conferencing + IDEs (+ local LLM servers) hold at least this share of RAM while what is
    /// available no longer covers the training run's measured need plus the reserve.
    pub apps_share: f64,
    /// The share of RAM kept free beyond the training run's need (macOS compresses and swaps
    /// well before memory is gone); with no need measured, this alone is the floor.
    pub reserve_share: f64,
    /// Raise contention when swap grew by at least this many MiB between two samples.
    pub swap_growth_mib: u64,
    /// Linux PSI: `some avg10` at or above this is a warning (percent of time stalled).
    pub psi_warn: f64,
    /// Linux PSI: `full avg10` at or above this is critical.
    pub psi_critical: f64,
    /// Seconds between samples in the app and in `contention --watch`.
    pub interval_s: u64,
}

impl Default for ContentionConfig {
    fn default() -> Self {
        let list = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect();
        Self {
            conferencing: list(&[
                "zoom.us",
                "zoom",
                "CptHost",
                "Microsoft Teams",
                "MSTeams",
                "teams",
                "teams-for-linux",
                "Webex",
                "Cisco Webex Meetings",
                "Slack",
                "FaceTime",
                "Discord",
                "Skype",
            ]),
            ides: list(&[
                "Visual Studio Code",
                "Code",
                "code-insiders",
                "Cursor",
                "PyCharm",
                "pycharm",
                "IntelliJ IDEA",
                "idea",
                "DataSpell",
                "CLion",
                "Xcode",
                "Zed",
                "Windsurf",
            ]),
            browsers: list(&[
                "Google Chrome",
                "chrome",
                "chromium",
                "Safari",
                "firefox",
                "Arc",
                "Microsoft Edge",
                "msedge",
                "Brave Browser",
                "brave",
            ]),
            llm_servers: list(&[
                "ollama",
                "Ollama",
                "LM Studio",
                "lms",
                "llama-server",
                "llama-cli",
                "llamafile",
                "koboldcpp",
                "local-ai",
                "Jan",
            ]),
            apps_share: 0.25,
            reserve_share: 0.15,
            swap_growth_mib: 256,
            psi_warn: 10.0,
            psi_critical: 5.0,
            interval_s: 5,
        }
    }
}

/// What the user said the main job is.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    #[default]
    Training,
    Inference,
    LlmInference,
}

/// The decision rules' thresholds (defaults from field practice; replace them with your own).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecideThresholds {
    /// An accelerator less than this much faster than the CPU (step time) while the GPU is busy
    /// less than `gpu_busy` is starved: suspect the data pipeline (0.22 = 22 % faster).
    pub pipeline_speedup: f64,
    /// GPU utilisation under which the accelerator is idle (0.18 = 18 %).
    pub gpu_busy: f64,
    /// Speed-ups within this of 1× mean the work did not really move: check device placement
    /// and synchronisation (0.10: 0.9×–1.1×).
    pub near_one: f64,
    /// CPU-fallback operators seen over at least this many days mean the architecture should be
    /// split (14: two weeks).
    pub fallback_days: u32,
    /// Sweeps and runs older than this many days are not used as evidence.
    pub max_age_days: u32,
    /// One operator taking at least this share of the GPU time of a profiled run
    /// (`headroom run --profile-ops`) is a kernel gap worth profiling (0.5 = half).
    pub slow_layer_share: f64,
    /// MLX at least this much faster (samples/s) than torch at the same batch makes it the
    /// recommendation where it runs (0.10 = 10 %).
    pub mlx_faster: f64,
    /// Your run waiting on its DataLoader for at least this share of the step is bound by its
    /// data pipeline, not the device (0.5 = half).
    pub data_share: f64,
    /// What the main job is: `training`, `inference` or `llm-inference`.
    pub main_job: WorkloadKind,
    /// Results must match CUDA bit for bit.
    pub cuda_parity_required: bool,
    /// Autocast at least this much faster (samples/s) than full precision on the same command
    /// and batch pays on this machine (0.10 = 10 %).
    pub amp_gain: f64,
    /// Activation checkpointing that saves less than this share of peak memory is not worth its
    /// recomputation (0.10 = 10 %).
    pub checkpoint_saving: f64,
    /// Host syncs every iteration (`loss.item()` and the like) that block at least this share
    /// of the step are worth moving out of the loop (0.05 = 5 %).
    pub sync_share: f64,
}

impl Default for DecideThresholds {
    fn default() -> Self {
        Self {
            pipeline_speedup: 0.22,
            gpu_busy: 0.18,
            near_one: 0.10,
            mlx_faster: 0.10,
            fallback_days: 14,
            max_age_days: 30,
            slow_layer_share: 0.5,
            data_share: crate::outcome::DATA_BOUND_SHARE,
            main_job: WorkloadKind::Training,
            cuda_parity_required: false,
            amp_gain: 0.10,
            checkpoint_saving: 0.10,
            sync_share: 0.05,
        }
    }
}
