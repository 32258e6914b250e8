//! The Settings panel: the keys of the configuration file the CLI reads (`[epochs]`,
//! `[contention]`, `[decide]`), each with its value and its default, changed one at a time
//! through the same code as `headroom config set` (typed from the key, range-checked, the rest of
//! the file left as written; a refused value writes nothing and says why).

use headroom_core::config::{self, Config};
use serde::Serialize;

use crate::commands::blocking;
use crate::error::AppError;

/// One key as the panel shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Setting {
    /// `SECTION.KEY`, as `headroom config set` names it.
    pub key: String,
    /// Its value now (lists comma-separated), as it would be typed back.
    pub value: String,
    pub default: String,
}

/// Every settable key of the configuration in effect.
fn list() -> Result<Vec<Setting>, AppError> {
    let now = config::settings_of(&config::load()?);
    let defaults = config::settings_of(&Config::default());
    Ok(now
        .into_iter()
        .map(|(key, value)| {
            let default = defaults
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            Setting {
                key,
                value,
                default,
            }
        })
        .collect())
}

/// The settings now.
#[tauri::command]
pub async fn settings() -> Result<Vec<Setting>, AppError> {
    blocking(list).await
}

/// Sets one key, then the settings as they are after it.
#[tauri::command]
pub async fn set_setting(key: String, value: String) -> Result<Vec<Setting>, AppError> {
    blocking(move || {
        config::set_at(&config::config_path()?, &key, &value)?;
        list()
    })
    .await
}
