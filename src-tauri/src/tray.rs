//! The tray: its colour and tooltip from the facts it was told (pure, tested without a tray
//! host), its menu, and the glue that builds it. The tray reads no panel's state: each panel
//! tells it its part through one event ([`TRAY_EVENT`], a [`TrayPart`]), and the tray keeps the
//! latest of each and repaints when the look changes.

use std::sync::{Arc, Mutex};

use headroom_decide::{Column, Decision, Rule};
use headroom_probe::readiness::{LightState, Report};
use serde::{Deserialize, Serialize};
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Emitter, EventTarget, Listener, Runtime};

use crate::util::lock;

/// The one event the tray listens for; its payload is a [`TrayPart`]. Sent to the app's own
/// listeners only, never to the popover.
pub const TRAY_EVENT: &str = "headroom://tray";

/// A running or finished sweep, as the tray says it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepLine {
    pub running: bool,
    pub workload: String,
    pub device: String,
    /// What the worker is doing now, in words.
    pub message: String,
    pub points: usize,
}

/// A memory job, as the tray says it: only a watched run past the leak threshold shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryLine {
    pub title: String,
    pub growth: Option<f64>,
    pub crossed: bool,
}

/// The decision, as the tray says it: its headline and whether it says to move the work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionLine {
    pub headline: String,
    /// Contention fired: the work should move now.
    pub contention: bool,
    /// The verdict is the remote host.
    pub remote: bool,
}

impl DecisionLine {
    pub fn of(d: &Decision) -> Self {
        Self {
            headline: d.headline.clone(),
            contention: d.fired(Rule::Contention),
            remote: d.verdict == Some(Column::Remote),
        }
    }
}

/// The runs training on remote hosts, as the tray says them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteLine {
    /// Running runs on each host that has any.
    pub running: Vec<(String, u32)>,
}

impl RemoteLine {
    /// "2 runs training on rented-m4" / "3 runs training on 2 hosts"; `None` when none runs.
    pub fn text(&self) -> Option<String> {
        let busy: Vec<&(String, u32)> = self.running.iter().filter(|(_, n)| *n > 0).collect();
        let total: u32 = busy.iter().map(|(_, n)| n).sum();
        let runs = match total {
            0 => return None,
            1 => "1 run".to_owned(),
            n => format!("{n} runs"),
        };
        Some(match &busy[..] {
            [(host, _)] => format!("{runs} training on {host}"),
            many => format!("{runs} training on {} hosts", many.len()),
        })
    }
}

/// What one panel tells the tray: the newest of its facts (`None`: it has none now).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TrayPart {
    Readiness(Box<Report>),
    Sweep(Option<SweepLine>),
    Memory(Option<MemoryLine>),
    Decision(Option<DecisionLine>),
    Remote(Option<RemoteLine>),
}

/// The latest of each part the tray was told.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrayFacts {
    pub report: Option<Report>,
    pub sweep: Option<SweepLine>,
    pub memory: Option<MemoryLine>,
    pub decision: Option<DecisionLine>,
    pub remote: Option<RemoteLine>,
}

impl TrayFacts {
    /// Keeps `part` in place of the older one of its kind.
    pub fn take(&mut self, part: TrayPart) {
        match part {
            TrayPart::Readiness(r) => self.report = Some(*r),
            TrayPart::Sweep(s) => self.sweep = s,
            TrayPart::Memory(m) => self.memory = m,
            TrayPart::Decision(d) => self.decision = d,
            TrayPart::Remote(r) => self.remote = r,
        }
    }
}

/// Tells the tray one part (a no-op before the tray is built).
pub fn tell<R: Runtime>(app: &AppHandle<R>, part: TrayPart) {
    let _ = app.emit_to(EventTarget::App, TRAY_EVENT, part);
}

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
pub fn look(facts: &TrayFacts) -> TrayLook {
    let (colour, mut tooltip) = match &facts.report {
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
    if let Some(s) = facts.sweep.as_ref().filter(|s| s.running) {
        tooltip = format!(
            "sweeping {} on {}: {} ({} point{}) — {tooltip}",
            s.workload,
            s.device,
            s.message,
            s.points,
            if s.points == 1 { "" } else { "s" }
        );
    }
    let mut colour = colour;
    if let Some(m) = facts.memory.as_ref().filter(|m| m.crossed) {
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
    if let Some(r) = facts.remote.as_ref().and_then(RemoteLine::text) {
        tooltip = format!("{r} — {tooltip}");
    }
    if let Some(d) = &facts.decision {
        if d.contention {
            // The work should move now: that outranks everything else.
            colour = Colour::Red;
            tooltip = format!("{} — {tooltip}", d.headline);
        } else if d.remote {
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

#[cfg(test)]
mod tests {
    use headroom_probe::readiness::{Light, LightState, Report};

    use super::*;

    /// The look after each given part went through the event's JSON, as the listener gets it.
    fn told(
        report: Option<&Report>,
        sweep: Option<&SweepLine>,
        memory: Option<&MemoryLine>,
        decision: Option<&Decision>,
    ) -> TrayLook {
        let mut f = TrayFacts::default();
        let mut parts = vec![
            TrayPart::Sweep(sweep.cloned()),
            TrayPart::Memory(memory.cloned()),
            TrayPart::Decision(decision.map(DecisionLine::of)),
        ];
        parts.extend(report.map(|r| TrayPart::Readiness(Box::new(r.clone()))));
        for p in parts {
            let json = serde_json::to_string(&p).expect("a part serializes");
            let back: TrayPart = serde_json::from_str(&json).expect("and reads back");
            assert_eq!(back, p, "{json}");
            f.take(back);
        }
        look(&f)
    }

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
    fn runs_training_there_are_counted_in_the_tooltip() {
        let mut f = TrayFacts::default();
        let line = RemoteLine {
            running: vec![("rented-m4".into(), 2)],
        };
        let p = TrayPart::Remote(Some(line));
        let back: TrayPart =
            serde_json::from_str(&serde_json::to_string(&p).expect("json")).expect("back");
        assert_eq!(back, p);
        f.take(back);
        assert!(
            look(&f)
                .tooltip
                .starts_with("2 runs training on rented-m4 — "),
            "{}",
            look(&f).tooltip
        );
        let one = RemoteLine {
            running: vec![("a".into(), 1), ("b".into(), 0)],
        };
        assert_eq!(one.text().as_deref(), Some("1 run training on a"));
        let two = RemoteLine {
            running: vec![("a".into(), 1), ("b".into(), 2)],
        };
        assert_eq!(two.text().as_deref(), Some("3 runs training on 2 hosts"));
        f.take(TrayPart::Remote(Some(RemoteLine::default())));
        assert!(!look(&f).tooltip.contains("training on"));
    }

    #[test]
    fn the_real_h200_report_is_green_for_cuda() {
        let text = include_str!("../../bench/results/doctor_h200.json");
        let r: Report = serde_json::from_str(text).expect("a real doctor report");
        let l = told(Some(&r), None, None, None);
        assert_eq!(l.colour, Colour::Green);
        assert!(l.tooltip.starts_with("CUDA ready: "), "{}", l.tooltip);
        assert!(l.tooltip.contains("NVIDIA H200"), "{}", l.tooltip);
    }

    #[test]
    fn colour_follows_the_worst_light_and_cpu_only_is_amber() {
        use LightState::{Green, Off, Red, Yellow};
        assert_eq!(told(None, None, None, None).colour, Colour::Grey);
        let mps = report(&[
            ("cpu", Green),
            ("mps", Green),
            ("mlx", Off),
            ("conditions", Green),
        ]);
        assert_eq!(told(Some(&mps), None, None, None).colour, Colour::Green);
        let battery = report(&[("cpu", Green), ("mps", Green), ("conditions", Yellow)]);
        let l = told(Some(&battery), None, None, None);
        assert_eq!(l.colour, Colour::Amber);
        assert!(l.tooltip.starts_with("CONDITIONS: "), "{}", l.tooltip);
        let rosetta = report(&[("cpu", Green), ("mps", Red), ("conditions", Yellow)]);
        let l = told(Some(&rosetta), None, None, None);
        assert_eq!(l.colour, Colour::Red);
        assert_eq!(l.tooltip, "MPS blocked: mps reason");
        let cpu_only = report(&[
            ("cpu", Green),
            ("mps", Off),
            ("mlx", Off),
            ("conditions", Off),
        ]);
        let l = told(Some(&cpu_only), None, None, None);
        assert_eq!(l.colour, Colour::Amber);
        assert!(l.tooltip.contains("runs on the CPU"));
    }

    #[test]
    fn a_running_sweep_shows_its_progress_in_the_tooltip() {
        let s = SweepLine {
            running: true,
            workload: "vit-tiny".into(),
            device: "mps".into(),
            message: "batch 256: timed steps 4/10".into(),
            points: 1,
        };
        let l = told(None, Some(&s), None, None);
        assert!(
            l.tooltip
                .starts_with("sweeping vit-tiny on mps: batch 256: timed steps 4/10 (1 point)"),
            "{}",
            l.tooltip
        );
        let done = SweepLine {
            running: false,
            ..s
        };
        assert!(!told(None, Some(&done), None, None)
            .tooltip
            .contains("sweeping"));
        let leaking = MemoryLine {
            crossed: true,
            title: "python train.py".into(),
            growth: Some(0.31),
        };
        let l = told(None, None, Some(&leaking), None);
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
        use headroom_decide::{decide, Facts};
        let f = Facts {
            contention: vec![
                "swap grew by 512 MiB since the last sample (threshold 256 MiB)".into(),
            ],
            ..Facts::default()
        };
        let d = decide(&f, &headroom_store::config::DecideThresholds::default());
        let mps = report(&[("cpu", LightState::Green), ("mps", LightState::Green)]);
        let l = told(Some(&mps), None, None, Some(&d));
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
            told(Some(&mps), None, None, Some(&calm)).colour,
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
