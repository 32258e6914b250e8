//! Settings the probes read: the values come from `config.toml` (read and written by
//! headroom-core's `config`), the types and their defaults live here so that code that only
//! reads the machine needs no file.

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
