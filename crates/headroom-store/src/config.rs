//! Headroom's one typed configuration: every threshold and list with its default in one place,
//! read from `config.toml` in Headroom's data folder. A missing file means all defaults; a
//! missing key means its default; an unknown key or a wrong type is an error naming the line.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::CoreError;
use headroom_model::epochs::EpochThresholds;
pub use headroom_model::settings::ContentionConfig;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub epochs: EpochThresholds,
    pub contention: ContentionConfig,
    pub decide: DecideThresholds,
    /// The menu-bar app's own behaviour: open at login, its shortcut.
    pub app: AppConfig,
    /// The user's projects (`headroom project add`), by name.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub projects: std::collections::BTreeMap<String, Project>,
}

/// The menu-bar app's behaviour (`headroom config set app.open_at_login true` takes effect at
/// the app's next start; its Settings panel applies a change at once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AppConfig {
    /// Start the app when the user logs in (a LaunchAgent on macOS, an XDG autostart entry on
    /// Linux), with the popover closed.
    pub open_at_login: bool,
    /// The keyboard shortcut that opens and closes the popover from anywhere, as modifiers and
    /// one key joined by `+` (`CmdOrCtrl+Shift+H`); empty for none.
    pub shortcut: String,
}

/// The popover's shortcut unless the user picks another.
pub const DEFAULT_SHORTCUT: &str = "CmdOrCtrl+Shift+H";

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            open_at_login: false,
            shortcut: DEFAULT_SHORTCUT.to_owned(),
        }
    }
}

/// The modifiers the global-shortcut plugin's parser knows (`CmdOrCtrl` is Cmd on macOS, Ctrl
/// elsewhere).
const MODIFIERS: [&str; 12] = [
    "cmd",
    "command",
    "super",
    "cmdorctrl",
    "cmdorcontrol",
    "commandorctrl",
    "commandorcontrol",
    "ctrl",
    "control",
    "alt",
    "option",
    "shift",
];

/// Checks a shortcut's shape: at least one modifier and exactly one key, a letter, a digit,
/// F1–F24 or a named key (`Space`, `Enter`, arrows …). A shortcut with no modifier would take a
/// plain key from every other app, so it is refused.
pub fn check_shortcut(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Ok(());
    }
    let parts: Vec<&str> = text.split('+').map(str::trim).collect();
    let Some((key, mods)) = parts.split_last() else {
        return Ok(());
    };
    let hint = "write modifiers and one key joined by + (CmdOrCtrl+Shift+H), or empty for none";
    if mods.is_empty() {
        return Err(format!(
            "app.shortcut = {text:?} has no modifier; a bare key would be taken from every other app: {hint}"
        ));
    }
    for m in mods {
        if !MODIFIERS.contains(&m.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "app.shortcut = {text:?}: {m:?} is not a modifier (Cmd, Ctrl, CmdOrCtrl, Alt/Option, Shift, Super): {hint}"
            ));
        }
    }
    let k = key.to_ascii_lowercase();
    let named = [
        "space",
        "enter",
        "tab",
        "escape",
        "backspace",
        "delete",
        "home",
        "end",
        "pageup",
        "pagedown",
        "up",
        "down",
        "left",
        "right",
        "arrowup",
        "arrowdown",
        "arrowleft",
        "arrowright",
        "comma",
        "period",
        "slash",
        "semicolon",
        "quote",
        "minus",
        "equal",
        "backquote",
        "bracketleft",
        "bracketright",
        "backslash",
        "esc",
        "insert",
    ];
    let function = k
        .strip_prefix('f')
        .and_then(|n| n.parse::<u8>().ok())
        .is_some_and(|n| (1..=24).contains(&n));
    let single = k.len() == 1 && k.chars().all(|c| c.is_ascii_alphanumeric());
    if !(single || function || named.contains(&k.as_str())) {
        return Err(format!(
            "app.shortcut = {text:?}: {key:?} is not a key Headroom can bind (a letter, a digit, F1–F24, Space, Enter, an arrow…): {hint}"
        ));
    }
    Ok(())
}

pub use headroom_model::settings::{DecideThresholds, WorkloadKind};

/// Where the configuration lives: `config.toml` in Headroom's data folder.
pub fn config_path() -> Result<PathBuf, CoreError> {
    Ok(crate::paths::data_dir()?.join("config.toml"))
}

pub use headroom_model::outcome::DATA_BOUND_SHARE;

/// One project (its checks and uses are in [`crate::project`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// Its name (letters, digits, `-`, `_`, `.`), filled in from the table's key.
    #[serde(default)]
    pub name: String,
    /// The folder it runs in (absolute).
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub dir: PathBuf,
    /// The interpreter that runs `python`/`python3` in the command; none: the one on PATH.
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PathBuf>,
    /// The command, one argument per item, with `{batch}` and `{device}`.
    pub command: Vec<String>,
}

/// Reads the configuration from [`config_path`]; all defaults when the file does not exist.
pub fn load() -> Result<Config, CoreError> {
    load_from(&config_path()?)
}

/// Reads the configuration from `path`; all defaults when the file does not exist.
pub fn load_from(path: &Path) -> Result<Config, CoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(source) => {
            return Err(CoreError::Io {
                what: "cannot read the configuration",
                path: path.display().to_string(),
                source,
            })
        }
    };
    parse(&text).map_err(|e| {
        CoreError::InvalidInput(format!(
            "configuration {} is malformed: {e}\nfix that line (`headroom config show` prints \
             every key with its default), or move the file away to use the defaults",
            path.display()
        ))
    })
}

/// Reads the file at `path` as an editable document (comments and order kept), lets `f` change
/// it, checks that the result is still a valid configuration and writes it in place atomically;
/// nothing is written when any step fails. `what` says what the change was for, in errors.
pub fn edit_at(
    path: &Path,
    what: &str,
    f: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<(), CoreError>,
) -> Result<(), CoreError> {
    // One edit at a time, across processes (another `config set` or `project add` waits) and
    // between the app's threads (each open of the lock file is its own flock).
    let _edits = crate::paths::lock_edits(path)?;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(CoreError::Io {
                what: "cannot read the configuration",
                path: path.display().to_string(),
                source,
            })
        }
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        CoreError::InvalidInput(format!(
            "configuration {} is malformed: {}; fix it before {what}",
            path.display(),
            e.to_string().trim_end()
        ))
    })?;
    f(&mut doc)?;
    let out = doc.to_string();
    // A file written with CRLF line ends (an editor on Windows, a synced folder) keeps them.
    let out = if text.contains("\r\n") {
        out.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        out
    };
    parse(&out).map_err(|e| {
        CoreError::InvalidInput(format!(
            "the configuration {} would not read back after the change ({e}); nothing was written",
            path.display()
        ))
    })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| CoreError::Io {
            what: "cannot create Headroom's folder",
            path: dir.display().to_string(),
            source,
        })?;
    }
    crate::paths::write_atomically(path, out.as_bytes(), 0o644)
}

/// `headroom config set SECTION.KEY VALUE` on the file at `path`: the value is read as the type
/// the key has (a number, a whole number, true/false, text, or a comma-separated list), the rest
/// of the file is left as written, and a value out of range is refused with nothing written.
/// Returns the value as written.
pub fn set_at(path: &Path, key: &str, value: &str) -> Result<String, CoreError> {
    let bad = |why: String| CoreError::InvalidInput(format!("config set {key}: {why}"));
    let (section, name) = key
        .split_once('.')
        .filter(|(s, n)| !s.is_empty() && !n.is_empty() && !n.contains('.'))
        .ok_or_else(|| {
            bad(
                "name it SECTION.KEY, e.g. decide.amp_gain (`headroom config show` lists them)"
                    .into(),
            )
        })?;
    if !SETTABLE.contains(&section) && section != "projects" {
        return Err(bad(format!(
            "no section [{section}]; the settable ones are {}",
            SETTABLE.join(", ")
        )));
    }
    if section == "projects" {
        return Err(bad(
            "projects are changed with `headroom project add|rm`".into()
        ));
    }
    let defaults: toml::Table = toml::from_str(&Config::default().to_toml())
        .map_err(|e| bad(format!("the defaults do not read: {e}")))?;
    let kind = defaults
        .get(section)
        .and_then(|t| t.get(name))
        .ok_or_else(|| {
            bad("no such key; `headroom config show` prints every key with its value".into())
        })?;
    let not = |what: &str| bad(format!("{value:?} is not {what}"));
    let item: toml_edit::Value = match kind {
        toml::Value::Float(_) => value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| not("a number"))?
            .into(),
        toml::Value::Integer(_) => value
            .trim()
            .parse::<i64>()
            .map_err(|_| not("a whole number"))?
            .into(),
        toml::Value::Boolean(_) => match value.trim() {
            "true" | "on" | "yes" => true,
            "false" | "off" | "no" => false,
            _ => return Err(not("true or false")),
        }
        .into(),
        toml::Value::String(_) => value.into(),
        toml::Value::Array(_) => value
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect::<toml_edit::Array>()
            .into(),
        _ => return Err(bad("this key cannot be set from the command line".into())),
    };
    let shown = item.to_string().trim().to_owned();
    edit_at(path, "changing it", |doc| {
        let table = doc
            .entry(section)
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
            .as_table_mut()
            .ok_or_else(|| bad(format!("[{section}] in the file is not a table")))?;
        table[name] = toml_edit::Item::Value(item);
        Ok(())
    })?;
    Ok(shown)
}

/// The sections whose keys `config set` and the app's Settings panel change.
pub const SETTABLE: [&str; 4] = ["app", "epochs", "contention", "decide"];

/// Every settable key of `c` (`SECTION.KEY`) with its value as `config set` reads it back
/// (lists comma-separated), in the file's order.
pub fn settings_of(c: &Config) -> Vec<(String, String)> {
    let table: toml::Table = toml::from_str(&c.to_toml()).unwrap_or_default();
    let mut out = Vec::new();
    for section in SETTABLE {
        let Some(keys) = table.get(section).and_then(toml::Value::as_table) else {
            continue;
        };
        for (name, v) in keys {
            let text = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            out.push((format!("{section}.{name}"), text));
        }
    }
    out
}

/// Parses configuration text, checking every value's range.
pub fn parse(text: &str) -> Result<Config, String> {
    let mut c: Config = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())?;
    for (name, p) in &mut c.projects {
        p.name.clone_from(name);
    }
    c.check()?;
    Ok(c)
}

impl Config {
    /// Rejects values that cannot mean anything (shares outside 0–1, zero intervals).
    pub fn check(&self) -> Result<(), String> {
        let share = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} = {v} must be a share between 0 and 1"))
            }
        };
        share("contention.apps_share", self.contention.apps_share)?;
        share("contention.reserve_share", self.contention.reserve_share)?;
        if self.epochs.leak_growth.is_nan() || self.epochs.leak_growth <= 0.0 {
            return Err(format!(
                "epochs.leak_growth = {} must be above 0 (0.26 is +26 %)",
                self.epochs.leak_growth
            ));
        }
        share("epochs.slowdown", self.epochs.slowdown)?;
        share("decide.pipeline_speedup", self.decide.pipeline_speedup)?;
        share("decide.gpu_busy", self.decide.gpu_busy)?;
        share("decide.near_one", self.decide.near_one)?;
        share("decide.slow_layer_share", self.decide.slow_layer_share)?;
        share("decide.mlx_faster", self.decide.mlx_faster)?;
        share("decide.data_share", self.decide.data_share)?;
        share("decide.sync_share", self.decide.sync_share)?;
        share("decide.amp_gain", self.decide.amp_gain)?;
        share("decide.checkpoint_saving", self.decide.checkpoint_saving)?;
        // Pressure stall percentages: 0–100, the critical level a number too.
        for (name, v) in [
            ("contention.psi_warn", self.contention.psi_warn),
            ("contention.psi_critical", self.contention.psi_critical),
        ] {
            if !(0.0..=100.0).contains(&v) {
                return Err(format!(
                    "{name} = {v} must be a percentage of time stalled, between 0 and 100"
                ));
            }
        }
        if self.epochs.over_epochs == 0 {
            return Err("epochs.over_epochs must be 1 or more".into());
        }
        if self.contention.interval_s == 0 {
            return Err("contention.interval_s must be 1 or more".into());
        }
        check_shortcut(&self.app.shortcut)?;
        for p in self.projects.values() {
            p.validate().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The configuration as TOML, every key written out.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortcut_needs_a_modifier_and_one_known_key() {
        for ok in [
            "CmdOrCtrl+Shift+H",
            "ctrl+alt+space",
            "Super+F12",
            "Option+Shift+ArrowUp",
            "",
        ] {
            assert_eq!(check_shortcut(ok), Ok(()), "{ok}");
        }
        for (bad, says) in [
            ("H", "has no modifier"),
            ("Hyper+H", "\"Hyper\" is not a modifier"),
            ("Ctrl+Shift+Hello", "is not a key"),
            ("Ctrl+F25", "is not a key"),
            ("Ctrl+", "is not a key"),
        ] {
            let e = check_shortcut(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("config.toml");
        set_at(&path, "app.open_at_login", "on").expect("bool");
        set_at(&path, "app.shortcut", "Ctrl+Alt+K").expect("shortcut");
        let e = set_at(&path, "app.shortcut", "K").expect_err("bare key");
        assert!(e.to_string().contains("no modifier"), "{e}");
        let c = load_from(&path).expect("valid");
        assert!(c.app.open_at_login);
        assert_eq!(c.app.shortcut, "Ctrl+Alt+K");
        assert_eq!(Config::default().app.shortcut, DEFAULT_SHORTCUT);
    }

    #[test]
    fn config_set_writes_one_key_as_its_type_keeps_the_rest_and_refuses_nonsense() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "# my thresholds\n[decide]\nnear_one = 0.2 # tuned\n")
            .expect("write");
        assert_eq!(
            set_at(&path, "decide.amp_gain", "0.15").expect("float"),
            "0.15"
        );
        assert_eq!(
            set_at(&path, "contention.interval_s", "3").expect("int"),
            "3"
        );
        assert_eq!(
            set_at(&path, "decide.cuda_parity_required", "true").expect("bool"),
            "true"
        );
        set_at(&path, "contention.llm_servers", "ollama, llama-server").expect("list");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.starts_with("# my thresholds\n[decide]\nnear_one = 0.2 # tuned\n"),
            "{text}"
        );
        let c = load_from(&path).expect("valid");
        assert!((c.decide.amp_gain - 0.15).abs() < 1e-12);
        assert!((c.decide.near_one - 0.2).abs() < 1e-12);
        assert_eq!(c.contention.interval_s, 3);
        assert!(c.decide.cuda_parity_required);
        assert_eq!(c.contention.llm_servers, ["ollama", "llama-server"]);
        for (key, value, says) in [
            ("decide.amp_gain", "1.5", "between 0 and 1"),
            ("decide.amp_gain", "fast", "is not a number"),
            ("contention.interval_s", "0", "1 or more"),
            ("contention.interval_s", "2.5", "whole number"),
            ("decide.nope", "1", "no such key"),
            ("amp_gain", "1", "SECTION.KEY"),
            ("projects.x", "1", "project add"),
        ] {
            let e = set_at(&path, key, value).expect_err(key).to_string();
            assert!(e.contains(says), "{key}={value}: {e}");
        }
        let after = std::fs::read_to_string(&path).expect("read");
        assert_eq!(after, text, "a refused change writes nothing");
        // What the Settings panel lists reads back through `set_at` unchanged.
        let listed = settings_of(&c);
        let servers = listed
            .iter()
            .find(|(k, _)| k == "contention.llm_servers")
            .expect("listed");
        assert_eq!(servers.1, "ollama, llama-server");
        for (k, v) in &listed {
            set_at(&path, k, v).unwrap_or_else(|e| panic!("{k} = {v}: {e}"));
        }
        assert_eq!(settings_of(&load_from(&path).expect("valid")), listed);
    }

    /// The app saves from several threads at once: every change lands, none fails on another's
    /// temporary file.
    #[test]
    fn changes_from_many_threads_at_once_all_land() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("config.toml");
        let keys = [
            ("decide.amp_gain", "0.11"),
            ("decide.near_one", "0.12"),
            ("decide.data_share", "0.4"),
            ("contention.interval_s", "7"),
            ("epochs.slowdown", "0.3"),
            ("decide.gpu_busy", "0.2"),
        ];
        std::thread::scope(|s| {
            for (k, v) in keys {
                let path = &path;
                s.spawn(move || set_at(path, k, v).unwrap_or_else(|e| panic!("{k}: {e}")));
            }
        });
        let c = load_from(&path).expect("valid");
        let listed = settings_of(&c);
        for (k, v) in keys {
            let got = listed.iter().find(|(x, _)| x == k).map(|(_, v)| v.as_str());
            assert_eq!(got, Some(v), "{k}");
        }
    }

    #[test]
    fn an_empty_file_is_all_defaults_and_a_key_overrides_only_itself() {
        assert_eq!(parse("").expect("empty"), Config::default());
        let c = parse("[contention]\napps_share = 0.4\n").expect("one key");
        assert!((c.contention.apps_share - 0.4).abs() < f64::EPSILON);
        assert_eq!(c.contention.ides, ContentionConfig::default().ides);
        assert_eq!(c.decide, DecideThresholds::default());
    }

    #[test]
    fn pressure_levels_outside_0_to_100_are_refused_with_their_key() {
        for bad in ["psi_warn = -5", "psi_critical = nan", "psi_warn = 101"] {
            let e = parse(&format!("[contention]\n{bad}\n")).expect_err(bad);
            assert!(e.contains("contention.psi_"), "{e}");
            assert!(e.contains("between 0 and 100"), "{e}");
        }
        assert!(parse("[contention]\npsi_warn = 20\n").is_ok());
    }

    #[test]
    fn the_written_defaults_read_back_the_same() {
        let d = Config::default();
        assert_eq!(parse(&d.to_toml()).expect("round trip"), d);
    }

    #[test]
    fn typos_wrong_types_and_silly_values_are_refused_with_the_place() {
        let e = parse("[contention]\naps_share = 0.4\n").expect_err("typo");
        assert!(e.contains("aps_share") && e.contains("line 2"), "{e}");
        let e = parse("[decide]\ngpu_busy = \"high\"\n").expect_err("type");
        assert!(e.contains("gpu_busy") || e.contains("line 2"), "{e}");
        let e = parse("[contention]\napps_share = 1.5\n").expect_err("range");
        assert!(e.contains("contention.apps_share = 1.5"), "{e}");
        let e = parse("[contention]\ninterval_s = 0\n").expect_err("zero");
        assert!(e.contains("interval_s"), "{e}");
    }

    #[test]
    fn a_missing_file_is_the_defaults_and_a_broken_one_names_itself() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("config.toml");
        assert_eq!(load_from(&path).expect("missing"), Config::default());
        std::fs::write(&path, "[contention\n").expect("write");
        let e = load_from(&path).expect_err("broken").to_string();
        assert!(e.contains("config.toml is malformed"), "{e}");
        assert!(e.contains("headroom config show"), "{e}");
    }
}
