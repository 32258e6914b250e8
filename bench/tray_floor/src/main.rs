//! A tray-only process, for its memory floor: a green 32×32 icon with a two-item menu, the
//! ctrl+shift+H shortcut registered, and a thread reading /proc/meminfo every second (as the
//! app's sampler does), in GTK's main loop until killed. Prints its pid on stderr.

fn main() {
    gtk::init().expect("GTK starts (a display is needed: run under xvfb-run)");
    let mut rgba = vec![0_u8; 32 * 32 * 4];
    for px in rgba.chunks_mut(4) {
        px[1] = 200;
        px[3] = 255;
    }
    let icon = tray_icon::Icon::from_rgba(rgba, 32, 32).expect("icon");
    let menu = tray_icon::menu::Menu::new();
    for label in ["Open Headroom", "Quit"] {
        menu.append(&tray_icon::menu::MenuItem::new(label, true, None))
            .expect("menu item");
    }
    let _tray = tray_icon::TrayIconBuilder::new()
        .with_icon(icon)
        .with_menu(Box::new(menu))
        .with_tooltip("Headroom")
        .build()
        .expect("tray icon");
    let keys = global_hotkey::GlobalHotKeyManager::new().expect("shortcut manager");
    let shortcut = global_hotkey::hotkey::HotKey::new(
        Some(global_hotkey::hotkey::Modifiers::CONTROL | global_hotkey::hotkey::Modifiers::SHIFT),
        global_hotkey::hotkey::Code::KeyH,
    );
    if let Err(e) = keys.register(shortcut) {
        eprintln!("tray-floor: no shortcut: {e}");
    }
    std::thread::spawn(|| loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let _ = std::fs::read_to_string("/proc/meminfo");
    });
    eprintln!("tray-floor: pid {}", std::process::id());
    gtk::main();
}
