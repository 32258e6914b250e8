//! The Settings panel: the keys of the configuration file the CLI reads (`[app]`, `[epochs]`,
//! `[contention]`, `[decide]`), each with its value and its default, changed one at a time
//! through the same code as `headroom config set` (typed from the key, range-checked, the rest of
//! the file left as written; a refused value writes nothing and says why). A change to `[app]`
//! is applied at once (the login entry, the shortcut) and its outcome shown beside the key.

use headroom_store::config::{self, Config};
use serde::Serialize;

use tauri::{AppHandle, Manager};

use crate::desktop::DesktopState;
use crate::error::AppError;
use crate::util::blocking;

/// One key as the panel shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Setting {
    /// `SECTION.KEY`, as `headroom config set` names it.
    pub key: String,
    /// Its value now (lists comma-separated), as it would be typed back.
    pub value: String,
    pub default: String,
    /// What the app made of it, where that is more than the value (the login entry's place, a
    /// shortcut another app holds).
    pub note: Option<String>,
}

/// Every settable key of the configuration in effect.
fn list(desktop: &DesktopState) -> Result<Vec<Setting>, AppError> {
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
                note: desktop.note(&key),
                key,
                value,
                default,
            }
        })
        .collect())
}

/// The settings now.
#[tauri::command]
pub async fn settings(app: AppHandle) -> Result<Vec<Setting>, AppError> {
    blocking(move || list(&app.state::<DesktopState>())).await
}

/// Sets one key, applies it when it is the app's own, then the settings as they are after it.
#[tauri::command]
pub async fn set_setting(
    app: AppHandle,
    key: String,
    value: String,
) -> Result<Vec<Setting>, AppError> {
    blocking(move || {
        config::set_at(&config::config_path()?, &key, &value)?;
        if key.starts_with("app.") {
            crate::desktop::apply(&app, &config::load()?.app);
        }
        list(&app.state::<DesktopState>())
    })
    .await
}
