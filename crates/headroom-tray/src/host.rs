//! Whether this desktop can show the tray's icon (Linux only: a Mac's menu bar always can). The icon goes through
//! libayatana-appindicator: a StatusNotifierItem, shown where a StatusNotifierWatcher owns its
//! name on the session bus (KDE, most panels; GNOME only with an extension), else an XEmbed
//! status icon, shown where an X system tray owns the `_NET_SYSTEM_TRAY_S<screen>` selection.
//! Where neither is there the icon is nowhere to be seen, and Headroom, started at login, would
//! seem not to run: the tray says so, with the shortcut that opens it.

/// What the desktop offers for a tray icon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hosts {
    /// A StatusNotifierWatcher owns its name on the session bus.
    pub status_notifier: bool,
    /// An X system tray owns its selection.
    pub x_tray: bool,
}

impl Hosts {
    /// Whether the icon can be seen.
    pub fn any(self) -> bool {
        self.status_notifier || self.x_tray
    }
}

/// The shortcut as a user presses it here (`CmdOrCtrl` is Ctrl on Linux).
pub fn shortcut_for_people(configured: &str) -> String {
    configured
        .split('+')
        .map(|k| match k.trim() {
            "CmdOrCtrl" | "CommandOrControl" | "CmdOrControl" | "CommandOrCtrl" => "Ctrl",
            other => other,
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// What to tell a user whose desktop shows no tray icon: `None` where it shows one.
/// `shortcut` is the configured one (`None` when there is none).
pub fn notice(hosts: Hosts, shortcut: Option<&str>) -> Option<(String, String)> {
    if hosts.any() {
        return None;
    }
    let open = match shortcut.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => format!("press {} to open it", shortcut_for_people(s)),
        None => "start Headroom again to open it (no shortcut is set: app.shortcut)".to_owned(),
    };
    Some((
        "Headroom runs, without an icon".to_owned(),
        format!(
            "This desktop shows no tray icons (no StatusNotifierWatcher on the session bus, no X \
             system tray); {open}. On GNOME, an AppIndicator extension shows the icon."
        ),
    ))
}

/// The desktop's hosts, asked now.
pub fn probe() -> Hosts {
    Hosts {
        status_notifier: status_notifier_watcher(),
        x_tray: x_system_tray(),
    }
}

/// Whether `org.kde.StatusNotifierWatcher` has an owner on the session bus (no bus: none).
fn status_notifier_watcher() -> bool {
    zbus::block_on(async {
        let bus = zbus::Connection::session().await?;
        let dbus = zbus::fdo::DBusProxy::new(&bus).await?;
        let name = zbus::names::BusName::try_from("org.kde.StatusNotifierWatcher")?;
        Ok::<bool, zbus::Error>(dbus.name_has_owner(name).await?)
    })
    .unwrap_or(false)
}

/// Whether an X system tray owns `_NET_SYSTEM_TRAY_S<default screen>` (no X display: none).
fn x_system_tray() -> bool {
    let Ok(xlib) = x11_dl::xlib::Xlib::open() else {
        return false;
    };
    // SAFETY: a display opened here and closed before returning; the atom's name is a C string.
    unsafe {
        let display = (xlib.XOpenDisplay)(std::ptr::null());
        if display.is_null() {
            return false;
        }
        let screen = (xlib.XDefaultScreen)(display);
        let name =
            std::ffi::CString::new(format!("_NET_SYSTEM_TRAY_S{screen}")).unwrap_or_default();
        let atom = (xlib.XInternAtom)(display, name.as_ptr(), 0);
        let owner = (xlib.XGetSelectionOwner)(display, atom);
        (xlib.XCloseDisplay)(display);
        owner != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_desktop_without_a_tray_host_is_told_how_to_open_headroom() {
        let none = Hosts {
            status_notifier: false,
            x_tray: false,
        };
        let (title, body) = notice(none, Some("CmdOrCtrl+Shift+H")).expect("a notice");
        assert_eq!(title, "Headroom runs, without an icon");
        assert!(body.contains("press Ctrl+Shift+H to open it"), "{body}");
        let (_, body) = notice(none, Some(" ")).expect("a notice");
        assert!(body.contains("start Headroom again"), "{body}");
        for hosts in [
            Hosts {
                status_notifier: true,
                x_tray: false,
            },
            Hosts {
                status_notifier: false,
                x_tray: true,
            },
        ] {
            assert_eq!(notice(hosts, Some("CmdOrCtrl+Shift+H")), None, "{hosts:?}");
        }
        assert_eq!(shortcut_for_people("Alt+F12"), "Alt+F12");
    }
}
