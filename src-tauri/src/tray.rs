//! The tray: its colour and tooltip from the current facts (pure, tested without a tray host),
//! its menu, and the glue that builds it and keeps it up to date.

use headroom_model::decide::{Column, Decision, Rule};
use headroom_probe::readiness::{LightState, Report};
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::state::SweepSnapshot;

/// The tray's colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    /// MPS (or CUDA) is ready and measured.
    Green,
    /// Something to look at: only the CPU, a warning, a condition that skews figures.
    Amber,
    /// Blocked, or the work should move.
    Red,
    /// Not checked yet.
    Grey,
}

impl Colour {
    fn rgb(self) -> [u8; 3] {
        match self {
            Self::Green => [22, 163, 74],
            Self::Amber => [217, 119, 6],
            Self::Red => [220, 38, 38],
            Self::Grey => [120, 120, 120],
        }
    }
}

/// The tray's colour and tooltip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayLook {
    pub colour: Colour,
    pub tooltip: String,
}

/// The colour is the readiness verdict: red when any light is red, green when a GPU backend
/// (MPS or CUDA) is green and nothing else needs a look, amber otherwise. A running sweep says
/// its progress in the tooltip.
pub fn look(
    report: Option<&Report>,
    sweep: Option<&SweepSnapshot>,
    memory: Option<&crate::memory::MemorySnapshot>,
    decision: Option<&Decision>,
) -> TrayLook {
    let (colour, mut tooltip) = match report {
        None => (
            Colour::Grey,
            "Headroom: readiness not checked yet".to_owned(),
        ),
        Some(r) => {
            let reds: Vec<_> = r
                .lights
                .iter()
                .filter(|l| l.state == LightState::Red)
                .collect();
            let yellows: Vec<_> = r
                .lights
                .iter()
                .filter(|l| l.state == LightState::Yellow)
                .collect();
            let gpu = r.lights.iter().find(|l| {
                ["mps", "cuda"].contains(&l.backend.as_str()) && l.state == LightState::Green
            });
            if let Some(l) = reds.first() {
                (
                    Colour::Red,
                    format!("{} blocked: {}", l.backend.to_uppercase(), l.reason),
                )
            } else if let Some(l) = yellows.first() {
                (
                    Colour::Amber,
                    format!("{}: {}", l.backend.to_uppercase(), l.reason),
                )
            } else if let Some(g) = gpu {
                (
                    Colour::Green,
                    format!("{} ready: {}", g.backend.to_uppercase(), g.reason),
                )
            } else {
                (
                    Colour::Amber,
                    "no GPU backend here: work runs on the CPU".to_owned(),
                )
            }
        }
    };
    if let Some(s) = sweep.filter(|s| s.running) {
        tooltip = format!(
            "sweeping {} on {}: {} ({} point{}) — {tooltip}",
            s.workload,
            s.device,
            s.message,
            s.points.len(),
            if s.points.len() == 1 { "" } else { "s" }
        );
    }
    let mut colour = colour;
    if let Some(m) = memory.filter(|m| m.crossed) {
        // A watched run that grew past the leak threshold needs a look whatever the readiness.
        if colour != Colour::Red {
            colour = Colour::Amber;
        }
        tooltip = format!(
            "{} grew {:+.0} % since watching began: a leak is suspected — {tooltip}",
            m.title,
            m.growth.unwrap_or(0.0) * 100.0
        );
    }
    if let Some(d) = decision {
        if d.fired(Rule::Contention) {
            // The work should move now: that outranks everything else.
            colour = Colour::Red;
            tooltip = format!("{} — {tooltip}", d.headline);
        } else if d.verdict == Some(Column::Remote) {
            if colour != Colour::Red {
                colour = Colour::Amber;
            }
            tooltip = format!("{} — {tooltip}", d.headline);
        }
    }
    TrayLook { colour, tooltip }
}

/// The right-click menu: (id, label).
pub const MENU: &[(&str, &str)] = &[
    ("readiness", "Readiness"),
    ("sweep", "Run sweep"),
    ("open", "Open Headroom"),
    ("about", "About Headroom"),
    ("quit", "Quit"),
];

/// A round icon of `colour`, `size`×`size` RGBA, with a lighter centre so it reads as a light.
pub fn icon_rgba(colour: Colour, size: u32) -> Vec<u8> {
    let [r, g, b] = colour.rgb();
    let c = (f64::from(size) - 1.0) / 2.0;
    let mut px = Vec::with_capacity((size * size * 4) as usize);
    for y in 0..size {
        for x in 0..size {
            let d = ((f64::from(x) - c).powi(2) + (f64::from(y) - c).powi(2)).sqrt()
                / (f64::from(size) / 2.0);
            // Anti-aliased edge between 0.86 and 0.94 of the radius.
            let alpha = ((0.94 - d) / 0.08).clamp(0.0, 1.0);
            let shade = if d < 0.35 { 40 } else { 0 };
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            px.extend_from_slice(&[
                r.saturating_add(shade),
                g.saturating_add(shade),
                b.saturating_add(shade),
                (alpha * 255.0).round() as u8,
            ]);
        }
    }
    px
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
    let first = look(None, None, None, None);
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
                crate::show_popover(app);
                let _ = app.emit(crate::NAVIGATE_EVENT, event.id.as_ref());
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
    Ok(())
}

/// Repaints the tray from the current state.
pub fn refresh<R: Runtime>(app: &AppHandle<R>) {
    let state = app.state::<crate::state::AppState>();
    let report = crate::state::lock(&state.report).clone();
    let sweep = crate::state::lock(&state.sweep)
        .as_ref()
        .map(crate::state::RunningSweep::snapshot);
    let memory = crate::state::lock(&state.memory)
        .as_ref()
        .map(|m| crate::state::lock(&m.snapshot).clone());
    let overview = crate::state::lock(&state.overview).clone();
    let l = look(
        report.as_ref(),
        sweep.as_ref(),
        memory.as_ref(),
        overview.as_ref().map(|o| &o.decision),
    );
    // Set only when it changed: a new icon is a file written and a D-Bus signal on Linux, an
    // image made on macOS, every few seconds for nothing.
    static SHOWN: std::sync::Mutex<Option<TrayLook>> = std::sync::Mutex::new(None);
    let mut shown = crate::state::lock(&SHOWN);
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

#[cfg(test)]
mod tests {
    use headroom_probe::readiness::{Light, LightState, Report};

    use super::*;

    /// A real report captured on the H200 machine (CPU and CUDA green), with lights replaced.
    fn report(lights: &[(&str, LightState)]) -> Report {
        let text = include_str!("../../bench/results/doctor_h200.json");
        let mut r: Report = serde_json::from_str(text).expect("a real doctor report");
        r.lights = lights
            .iter()
            .map(|(b, s)| Light {
                backend: (*b).into(),
                state: *s,
                reason: format!("{b} reason"),
                fix: None,
            })
            .collect();
        r
    }

    #[test]
    fn the_real_h200_report_is_green_for_cuda() {
        let text = include_str!("../../bench/results/doctor_h200.json");
        let r: Report = serde_json::from_str(text).expect("a real doctor report");
        let l = look(Some(&r), None, None, None);
        assert_eq!(l.colour, Colour::Green);
        assert!(l.tooltip.starts_with("CUDA ready: "), "{}", l.tooltip);
        assert!(l.tooltip.contains("NVIDIA H200"), "{}", l.tooltip);
    }

    #[test]
    fn colour_follows_the_worst_light_and_cpu_only_is_amber() {
        use LightState::{Green, Off, Red, Yellow};
        assert_eq!(look(None, None, None, None).colour, Colour::Grey);
        let mps = report(&[
            ("cpu", Green),
            ("mps", Green),
            ("mlx", Off),
            ("conditions", Green),
        ]);
        assert_eq!(look(Some(&mps), None, None, None).colour, Colour::Green);
        let battery = report(&[("cpu", Green), ("mps", Green), ("conditions", Yellow)]);
        let l = look(Some(&battery), None, None, None);
        assert_eq!(l.colour, Colour::Amber);
        assert!(l.tooltip.starts_with("CONDITIONS: "), "{}", l.tooltip);
        let rosetta = report(&[("cpu", Green), ("mps", Red), ("conditions", Yellow)]);
        let l = look(Some(&rosetta), None, None, None);
        assert_eq!(l.colour, Colour::Red);
        assert_eq!(l.tooltip, "MPS blocked: mps reason");
        let cpu_only = report(&[
            ("cpu", Green),
            ("mps", Off),
            ("mlx", Off),
            ("conditions", Off),
        ]);
        let l = look(Some(&cpu_only), None, None, None);
        assert_eq!(l.colour, Colour::Amber);
        assert!(l.tooltip.contains("runs on the CPU"));
    }

    #[test]
    fn a_running_sweep_shows_its_progress_in_the_tooltip() {
        let s = SweepSnapshot {
            running: true,
            workload: "vit-tiny".into(),
            device: "mps".into(),
            message: "batch 256: timed steps 4/10".into(),
            points: vec![headroom_model::protocol::Point::failed(
                1,
                headroom_model::protocol::PointStatus::Ok,
                "",
            )],
            ..SweepSnapshot::default()
        };
        let l = look(None, Some(&s), None, None);
        assert!(
            l.tooltip
                .starts_with("sweeping vit-tiny on mps: batch 256: timed steps 4/10 (1 point)"),
            "{}",
            l.tooltip
        );
        let done = SweepSnapshot {
            running: false,
            ..s
        };
        assert!(!look(None, Some(&done), None, None)
            .tooltip
            .contains("sweeping"));
        let leaking = crate::memory::MemorySnapshot {
            running: true,
            crossed: true,
            title: "python train.py".into(),
            growth: Some(0.31),
            ..crate::memory::MemorySnapshot::default()
        };
        let l = look(None, None, Some(&leaking), None);
        assert_eq!(l.colour, Colour::Amber);
        assert!(
            l.tooltip
                .starts_with("python train.py grew +31 % since watching began"),
            "{}",
            l.tooltip
        );
    }

    #[test]
    fn contention_turns_the_tray_red_with_the_headline() {
        use headroom_model::decide::{decide, Facts};
        let f = Facts {
            contention: vec![
                "swap grew by 512 MiB since the last sample (threshold 256 MiB)".into(),
            ],
            ..Facts::default()
        };
        let d = decide(&f, &headroom_store::config::DecideThresholds::default());
        let mps = report(&[("cpu", LightState::Green), ("mps", LightState::Green)]);
        let l = look(Some(&mps), None, None, Some(&d));
        assert_eq!(l.colour, Colour::Red);
        assert!(
            l.tooltip.starts_with("Remote: memory contention"),
            "{}",
            l.tooltip
        );
        let calm = decide(
            &Facts::default(),
            &headroom_store::config::DecideThresholds::default(),
        );
        assert_eq!(
            look(Some(&mps), None, None, Some(&calm)).colour,
            Colour::Green
        );
    }

    #[test]
    fn the_menu_and_the_icon() {
        let labels: Vec<_> = MENU.iter().map(|(_, l)| *l).collect();
        assert_eq!(
            labels,
            [
                "Readiness",
                "Run sweep",
                "Open Headroom",
                "About Headroom",
                "Quit"
            ]
        );
        let px = icon_rgba(Colour::Red, 32);
        assert_eq!(px.len(), 32 * 32 * 4);
        // The centre is the colour (lightened), the corner transparent.
        let centre = &px[(16 * 32 + 16) * 4..(16 * 32 + 16) * 4 + 4];
        assert_eq!(centre, [255, 78, 78, 255]);
        assert_eq!(px[3], 0);
        let green = icon_rgba(Colour::Green, 32);
        assert_ne!(px, green);
    }
}
