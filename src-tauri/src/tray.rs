//! The tray inside the app (`headroom-app` started alone): its menu and the glue that builds
//! it over the pure look in [`headroom_core::menubar`]. The tray reads no panel's state: each
//! panel tells it its part through one event ([`TRAY_EVENT`], a [`TrayPart`]), and the tray keeps
//! the latest of each and repaints when the look changes. Started by `headroom-tray` (the
//! popover's process), the app has no tray of its own: each part goes to that process as a line
//! on standard output.

use std::sync::{Arc, Mutex};

pub use headroom_core::menubar::{
    icon_rgba, look, DecisionLine, MemoryLine, RemoteLine, ToTray, TrayFacts, TrayLook, TrayPart,
    MENU,
};
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Emitter, EventTarget, Listener, Runtime};

use crate::util::lock;

/// The one event the tray listens for; its payload is a [`TrayPart`]. Sent to the app's own
/// listeners only, never to the popover.
pub const TRAY_EVENT: &str = "headroom://tray";

/// Tells the tray one part (a no-op before the tray is built). The tray process judges the
/// decision itself: this app's decisions are not sent to it.
pub fn tell<R: Runtime>(app: &AppHandle<R>, part: TrayPart) {
    if crate::relay::external() {
        if !matches!(part, TrayPart::Decision(_)) {
            crate::relay::to_tray(&ToTray::Part(part));
        }
        return;
    }
    let _ = app.emit_to(EventTarget::App, TRAY_EVENT, part);
}

/// The tray icon's id.
pub const TRAY_ID: &str = "headroom";
const ICON_SIZE: u32 = 32;

/// Builds the tray with its menu; left click toggles the popover near the icon.
pub fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let items: Vec<MenuItem<R>> = MENU
        .iter()
        .map(|(id, label)| MenuItem::with_id(app, *id, *label, true, None::<&str>))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&dyn tauri::menu::IsMenuItem<R>> = items
        .iter()
        .map(|i| i as &dyn tauri::menu::IsMenuItem<R>)
        .collect();
    let menu = Menu::with_items(app, &refs)?;
    let facts = Arc::new(Mutex::new(TrayFacts::default()));
    let first = look(&lock(&facts));
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(Image::new_owned(
            icon_rgba(first.colour, ICON_SIZE),
            ICON_SIZE,
            ICON_SIZE,
        ))
        .tooltip(&first.tooltip)
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| match event.id.as_ref() {
            "quit" => app.exit(0),
            "readiness" | "sweep" | "about" => {
                crate::show_popover_on(app, event.id.as_ref());
            }
            _ => crate::show_popover(app),
        })
        .on_tray_icon_event(|tray, event| {
            // Every event tells the positioner where the icon is (macOS, Windows).
            tauri_plugin_positioner::on_tray_event(tray.app_handle(), &event);
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                crate::desktop::toggle_popover(tray.app_handle());
            }
        })
        .build(app)?;
    let (handle, shown) = (app.clone(), Mutex::new(Some(first)));
    app.listen(TRAY_EVENT, move |event| {
        let part: TrayPart = match serde_json::from_str(event.payload()) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("headroom-app: a tray part that does not read: {e}");
                return;
            }
        };
        let l = {
            let mut f = lock(&facts);
            f.take(part);
            look(&f)
        };
        repaint(&handle, &shown, l);
    });
    Ok(())
}

/// Sets the icon and tooltip to `l` — only when it changed: a new icon is a file written and a
/// D-Bus signal on Linux, an image made on macOS, every few seconds for nothing.
fn repaint<R: Runtime>(app: &AppHandle<R>, shown: &Mutex<Option<TrayLook>>, l: TrayLook) {
    let mut shown = lock(shown);
    if shown.as_ref() == Some(&l) {
        return;
    }
    if let Some(tray) = app.tray_by_id(TRAY_ID) {
        let _ = tray.set_icon(Some(Image::new_owned(
            icon_rgba(l.colour, ICON_SIZE),
            ICON_SIZE,
            ICON_SIZE,
        )));
        let _ = tray.set_tooltip(Some(&l.tooltip));
        *shown = Some(l);
    }
}
