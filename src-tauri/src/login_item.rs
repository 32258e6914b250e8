//! Open at login as Mac apps do it: the app itself registered as a login item through
//! `SMAppService.mainAppService` (macOS 13+), so it shows under its own name in System Settings →
//! General → Login Items, and the user's approval, when macOS asks for it, is a state the
//! Settings panel shows. (The autostart plugin's LaunchAgent shows there under the user's name,
//! and its AppleScript mode asks for Automation rights.) Linux keeps the plugin's desktop entry.
//!
//! The words for each state are a pure function, tested here; the calls into ServiceManagement
//! are compiled and linted for aarch64-apple-darwin by `scripts/check-macos.sh`, never run in
//! this project's machines.

// The states and their words serve the macOS path; on Linux only their tests use them.
#![cfg_attr(not(target_os = "macos"), allow(dead_code))]

/// Where the login item stands, as `SMAppServiceStatus` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginItem {
    /// Registered and allowed: Headroom starts at login.
    Enabled,
    /// Registered, waiting for the user to turn it on in System Settings.
    RequiresApproval,
    /// Not registered.
    NotRegistered,
    /// The system does not find the app's login item (an app run from outside /Applications, or
    /// not signed as the system expects).
    NotFound,
}

/// What the Settings panel says beside "open at login", for what was `wanted` and what the
/// system now says.
pub fn words(wanted: bool, now: LoginItem) -> String {
    const WHERE: &str = "System Settings → General → Login Items";
    match (wanted, now) {
        (true, LoginItem::Enabled) => format!("starts at login: Headroom in {WHERE}"),
        (_, LoginItem::RequiresApproval) => format!(
            "waiting for your approval: turn Headroom on in {WHERE} (opened for you)"
        ),
        (true, LoginItem::NotRegistered | LoginItem::NotFound) => format!(
            "could not be added to {WHERE}: move Headroom.app to /Applications, open it from there and try again"
        ),
        (false, LoginItem::Enabled) => {
            format!("still starts at login: turn Headroom off in {WHERE}")
        }
        (false, LoginItem::NotRegistered | LoginItem::NotFound) => {
            "does not start at login".to_owned()
        }
    }
}

/// Registers or unregisters the app as a login item and says where it stands now; macOS's
/// refusal in its own words. Where approval is needed, System Settings opens on Login Items.
#[cfg(target_os = "macos")]
pub fn set(on: bool) -> Result<LoginItem, String> {
    use objc2_service_management::{SMAppService, SMAppServiceStatus};
    let read = |s: SMAppServiceStatus| match s {
        SMAppServiceStatus::Enabled => LoginItem::Enabled,
        SMAppServiceStatus::RequiresApproval => LoginItem::RequiresApproval,
        SMAppServiceStatus::NotFound => LoginItem::NotFound,
        _ => LoginItem::NotRegistered,
    };
    // SAFETY: ServiceManagement's class methods and the service's methods take no pointers
    // from us; the returned object is retained for as long as it is used here.
    let service = unsafe { SMAppService::mainAppService() };
    // SAFETY: as above.
    let before = read(unsafe { service.status() });
    let done = match (on, before) {
        (true, LoginItem::NotRegistered | LoginItem::NotFound) => {
            // SAFETY: as above.
            unsafe { service.registerAndReturnError() }
        }
        (false, LoginItem::Enabled | LoginItem::RequiresApproval) => {
            // SAFETY: as above.
            unsafe { service.unregisterAndReturnError() }
        }
        _ => Ok(()),
    };
    // SAFETY: as above.
    let now = read(unsafe { service.status() });
    if on && now == LoginItem::RequiresApproval {
        // SAFETY: a class method without arguments.
        unsafe { SMAppService::openSystemSettingsLoginItems() };
    }
    done.map_err(|e| e.localizedDescription().to_string())?;
    Ok(now)
}

/// The LaunchAgent that the autostart plugin wrote on macOS before the app registered itself
/// (`~/Library/LaunchAgents/Headroom.plist`): removed, so the app does not start twice.
#[cfg(target_os = "macos")]
pub fn forget_launch_agent() {
    if let Some(home) = std::env::var_os("HOME") {
        let plist = std::path::Path::new(&home).join("Library/LaunchAgents/Headroom.plist");
        if plist.is_file() {
            let _ = std::fs::remove_file(plist);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_is_said_with_what_to_do() {
        assert_eq!(
            words(true, LoginItem::Enabled),
            "starts at login: Headroom in System Settings → General → Login Items"
        );
        for wanted in [true, false] {
            assert!(words(wanted, LoginItem::RequiresApproval)
                .starts_with("waiting for your approval: turn Headroom on"));
        }
        assert!(words(true, LoginItem::NotFound).contains("move Headroom.app to /Applications"));
        assert!(words(true, LoginItem::NotRegistered).starts_with("could not be added"));
        assert!(words(false, LoginItem::Enabled).starts_with("still starts at login"));
        assert_eq!(
            words(false, LoginItem::NotRegistered),
            "does not start at login"
        );
    }
}
