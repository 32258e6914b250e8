//! The menu-bar icon's look, shared by the tray process (`headroom-tray`) and the app: its colour
//! and tooltip from the facts it was told (pure, tested without a tray host), its menu, and the
//! lines the popover's process sends the tray process. Each panel tells the tray its part (a
//! [`TrayPart`]); the tray keeps the latest of each and repaints when the look changes.

use headroom_decide::{Column, Decision, Rule};
use headroom_probe::readiness::{LightState, Report};
use serde::{Deserialize, Serialize};

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

impl SweepLine {
    /// The tray's line for a sweep's snapshot.
    pub fn of(s: &crate::jobs::live::SweepSnapshot) -> Self {
        Self {
            running: s.running,
            workload: s.workload.clone(),
            device: s.device.clone(),
            message: s.message.clone(),
            points: s.points.len(),
        }
    }
}

/// A memory job, as the tray says it: only a watched run past the leak threshold shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryLine {
    pub title: String,
    pub growth: Option<f64>,
    pub crossed: bool,
}

impl MemoryLine {
    /// The tray's line for a memory job's snapshot.
    pub fn of(s: &crate::jobs::live_memory::MemorySnapshot) -> Self {
        Self {
            title: s.title.clone(),
            growth: s.growth,
            crossed: s.crossed,
        }
    }
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

/// What a notification is about; it decides the buttons it carries and the panel a click opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Memory contention or a verdict that moved to the remote host: carries "Open the Remote
    /// panel", and a click on the notification itself opens that panel too.
    Contention,
    /// A leak seen by a watch or an epochs run; a click opens the Memory panel.
    Leak,
    /// Anything else; a click opens the Overview.
    Verdict,
}

impl Kind {
    /// The notification id: one per kind, so a click can be traced back to what it was about.
    pub fn id(self) -> i32 {
        match self {
            Kind::Contention => 1,
            Kind::Leak => 2,
            Kind::Verdict => 3,
        }
    }

    pub fn from_id(id: i32) -> Option<Kind> {
        [Kind::Contention, Kind::Leak, Kind::Verdict]
            .into_iter()
            .find(|k| k.id() == id)
    }
}

/// The panel to show for `action` (an action id, or `tap` for a click on the notification
/// itself) on a notification with id `id`, when one is known.
pub fn panel_for(action: &str, id: Option<i32>) -> &'static str {
    if action == OPEN_REMOTE {
        return "remote";
    }
    match id.and_then(Kind::from_id) {
        Some(Kind::Contention) => "remote",
        Some(Kind::Leak) => "memory",
        Some(Kind::Verdict) | None => "overview",
    }
}

/// The button that opens the Remote panel.
pub const OPEN_REMOTE: &str = "open-remote";
/// The button that starts the current project's training on the remote host, detached.
pub const CONTINUE_REMOTE: &str = "continue-remote";
/// What to tell the user when the decision moves from `prev` to `next`: a new verdict, or
/// contention newly raised. Nothing on the first sample unless contention is already raised.
/// A notice that points at the remote host carries the button that opens the Remote panel.
pub fn change_notice(prev: Option<&Decision>, next: &Decision) -> Option<(Kind, String, String)> {
    let contention =
        next.fired(Rule::Contention) && !prev.is_some_and(|p| p.fired(Rule::Contention));
    if contention {
        let why = next
            .reasons
            .iter()
            .find(|r| r.rule == Rule::Contention)
            .map_or_else(String::new, |r| r.text.clone());
        return Some((
            Kind::Contention,
            "Headroom: memory contention — move the run to the remote host".into(),
            format!("{why}. Open Headroom for the decision table."),
        ));
    }
    let prev = prev?;
    (prev.verdict != next.verdict).then(|| {
        let to = next.verdict.map_or("fix first", |c| c.label());
        let kind = if next.verdict == Some(Column::Remote) {
            Kind::Contention
        } else {
            Kind::Verdict
        };
        (kind, format!("Headroom: now {to}"), next.headline.clone())
    })
}

/// A line the popover's process writes to the tray process on its standard output (JSON, one
/// per line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToTray {
    /// A panel's part of the tray's look.
    Part(TrayPart),
    /// The project the Overview is judged from now (the tray's decisions and its hand-off
    /// follow it).
    Project(Option<String>),
    /// The `[app]` settings changed: the tray reads them again (its shortcut).
    Settings,
    /// The popover's page has loaded: the background work held for its opening runs on.
    Loaded,
    /// Start a sweep (the tray runs it: it goes on while the popover is closed and its process
    /// gone); answered by [`ToPopover::SweepStarted`], then followed by [`ToPopover::Sweep`].
    Sweep(crate::jobs::live::SweepOrder),
    /// Cancel the running sweep (its points kept).
    CancelSweep,
    /// Start a memory job (the tray runs it, as a sweep); answered by
    /// [`ToPopover::MemoryStarted`], then followed by [`ToPopover::Memory`].
    Memory(crate::jobs::live_memory::MemoryOrder),
    /// Stop the running memory job (what it measured kept).
    StopMemory,
    /// Open the tunnel to this host's screen and its viewer (the tray holds the tunnel);
    /// answered by [`ToPopover::ScreenOpened`].
    OpenScreen(String),
    /// Close the tunnel to a host's screen.
    CloseScreen,
}

impl ToTray {
    /// The line as written (no newline).
    pub fn line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What the tray process tells the popover's process on its standard input, a line each:
/// `show`, `show PANEL`, `toggle`, `quit`, and the tray's sweep as `sweep JSON` (its
/// snapshot at each change) and `sweep-started JSON` (the answer to [`ToTray::Sweep`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ToPopover {
    /// Show the popover, on a panel when one is named.
    Show(Option<String>),
    /// Show it, or hide it when it shows (the tray icon's click, the shortcut).
    Toggle,
    /// End (the tray's Quit).
    Quit,
    /// The sweep the tray runs (or ran last), as it stands now.
    Sweep(Box<crate::jobs::live::SweepSnapshot>),
    /// A sweep ordered was started (its first snapshot) or refused (why).
    SweepStarted(Result<Box<crate::jobs::live::SweepSnapshot>, crate::jobs::sweep::JobError>),
    /// The memory job the tray runs (or ran last), as it stands now.
    Memory(Box<crate::jobs::live_memory::MemorySnapshot>),
    /// A memory job ordered was started (its first snapshot) or refused (why).
    MemoryStarted(
        Result<Box<crate::jobs::live_memory::MemorySnapshot>, crate::jobs::sweep::JobError>,
    ),
    /// The tunnel to a host's screen was opened (its URL) or not (why).
    ScreenOpened(Result<Box<String>, crate::jobs::sweep::JobError>),
}

/// A `…-started` line's payload as it crosses the pipe.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Started<T> {
    Ok(T),
    Err(crate::jobs::sweep::JobError),
}

impl<T: Clone> Started<T> {
    fn of(r: &Result<T, crate::jobs::sweep::JobError>) -> Self {
        match r {
            Ok(s) => Self::Ok(s.clone()),
            Err(e) => Self::Err(e.clone()),
        }
    }

    fn result(self) -> Result<T, crate::jobs::sweep::JobError> {
        match self {
            Self::Ok(s) => Ok(s),
            Self::Err(e) => Err(e),
        }
    }
}

fn json<T: Serialize>(word: &str, t: &T) -> String {
    format!("{word} {}", serde_json::to_string(t).unwrap_or_default())
}

impl ToPopover {
    /// The line as written (no newline: JSON is written on one line).
    pub fn line(&self) -> String {
        match self {
            Self::Show(None) => "show".into(),
            Self::Show(Some(p)) => format!("show {p}"),
            Self::Toggle => "toggle".into(),
            Self::Quit => "quit".into(),
            Self::Sweep(s) => json("sweep", s),
            Self::SweepStarted(r) => json("sweep-started", &Started::of(r)),
            Self::Memory(s) => json("memory", s),
            Self::MemoryStarted(r) => json("memory-started", &Started::of(r)),
            Self::ScreenOpened(r) => json("screen-opened", &Started::of(r)),
        }
    }

    /// Reads a line; `None` for one that is none of them (a panel name is one word of letters).
    pub fn parse(line: &str) -> Option<Self> {
        if let Some((word, json)) = line.split_once(' ').filter(|(_, j)| j.starts_with('{')) {
            return match word {
                "sweep" => serde_json::from_str(json).ok().map(Self::Sweep),
                "sweep-started" => serde_json::from_str::<Started<_>>(json)
                    .ok()
                    .map(|s| Self::SweepStarted(s.result())),
                "memory" => serde_json::from_str(json).ok().map(Self::Memory),
                "memory-started" => serde_json::from_str::<Started<_>>(json)
                    .ok()
                    .map(|s| Self::MemoryStarted(s.result())),
                "screen-opened" => serde_json::from_str::<Started<_>>(json)
                    .ok()
                    .map(|s| Self::ScreenOpened(s.result())),
                _ => None,
            };
        }
        let mut words = line.split_whitespace();
        let order = match (words.next()?, words.next()) {
            ("show", None) => Self::Show(None),
            ("show", Some(p)) if p.chars().all(|c| c.is_ascii_alphabetic()) => {
                Self::Show(Some(p.to_owned()))
            }
            ("toggle", None) => Self::Toggle,
            ("quit", None) => Self::Quit,
            _ => return None,
        };
        words.next().is_none().then_some(order)
    }
}

#[cfg(test)]
mod tests {
    use headroom_decide::{decide, Facts};
    use headroom_probe::readiness::{Light, LightState, Report};
    use headroom_store::config::DecideThresholds;

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
        let text = include_str!("../../../bench/results/doctor_h200.json");
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
        let text = include_str!("../../../bench/results/doctor_h200.json");
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

    #[test]
    fn a_click_opens_the_panel_the_notification_is_about() {
        assert_eq!(panel_for(OPEN_REMOTE, Some(Kind::Leak.id())), "remote");
        assert_eq!(panel_for(OPEN_REMOTE, None), "remote");
        assert_eq!(panel_for("tap", Some(Kind::Contention.id())), "remote");
        assert_eq!(panel_for("tap", Some(Kind::Leak.id())), "memory");
        assert_eq!(panel_for("tap", Some(Kind::Verdict.id())), "overview");
        assert_eq!(panel_for("tap", Some(99)), "overview");
        assert_eq!(panel_for("tap", None), "overview");
    }

    fn decided(contention: &[&str], parity: bool) -> Decision {
        let f = Facts {
            contention: contention.iter().map(|s| (*s).to_owned()).collect(),
            cuda_parity_required: parity,
            ..Facts::default()
        };
        decide(&f, &DecideThresholds::default())
    }

    #[test]
    fn a_notice_when_contention_starts_or_the_verdict_moves_not_otherwise() {
        let calm = decided(&[], false);
        assert_eq!(calm.verdict, Some(Column::Cpu));
        assert_eq!(change_notice(None, &calm), None, "no news at start");
        assert_eq!(change_notice(Some(&calm), &calm), None);
        let squeezed = decided(
            &["conferencing and IDEs hold 10.0 GiB (31 % of 32.0 GiB RAM; threshold 25 %)"],
            false,
        );
        let (kind, title, body) = change_notice(Some(&calm), &squeezed).expect("contention starts");
        assert_eq!(kind, Kind::Contention, "carries the Remote panel button");
        assert!(title.contains("memory contention"), "{title}");
        assert!(body.contains("31 % of 32.0 GiB"), "{body}");
        assert!(
            change_notice(None, &squeezed).is_some(),
            "raised at start is news"
        );
        assert_eq!(change_notice(Some(&squeezed), &squeezed), None, "said once");
        let (kind, title, body) = change_notice(Some(&squeezed), &calm).expect("back to the CPU");
        assert_eq!(kind, Kind::Verdict);
        assert_eq!(title, "Headroom: now CPU");
        assert!(body.starts_with("CPU"), "{body}");
        let parity = decided(&[], true);
        let (kind, title, _) = change_notice(Some(&calm), &parity).expect("moves remote");
        assert_eq!(kind, Kind::Contention);
        assert_eq!(title, "Headroom: now remote");
    }

    #[test]
    fn the_lines_between_the_two_processes_read_back() {
        for o in [
            ToPopover::Show(None),
            ToPopover::Show(Some("readiness".into())),
            ToPopover::Toggle,
            ToPopover::Quit,
            ToPopover::Sweep(Box::new(crate::jobs::live::SweepSnapshot {
                running: true,
                workload: "mlp".into(),
                message: "batch 64: timed steps 3/10\nsecond line".into(),
                chart_svg: "<svg>\n<text>samples/s</text></svg>".into(),
                ..Default::default()
            })),
            ToPopover::SweepStarted(Ok(Box::default())),
            ToPopover::Memory(Box::new(crate::jobs::live_memory::MemorySnapshot {
                running: true,
                title: "lm: python train.py --batch 64".into(),
                growth: Some(0.3),
                ..Default::default()
            })),
            ToPopover::MemoryStarted(Ok(Box::default())),
            ToPopover::ScreenOpened(Ok(Box::new("vnc://localhost:5901".into()))),
            ToPopover::ScreenOpened(Err(crate::jobs::sweep::JobError {
                code: crate::error::ErrorCode::Tunnel,
                message: "ssh: connect refused — start sshd".into(),
            })),
            ToPopover::MemoryStarted(Err(crate::jobs::sweep::JobError {
                code: crate::error::ErrorCode::NotFound,
                message: "process 7 is gone".into(),
            })),
            ToPopover::SweepStarted(Err(crate::jobs::sweep::JobError {
                code: crate::error::ErrorCode::Busy,
                message: "a sweep is already running".into(),
            })),
        ] {
            let line = o.line();
            assert!(!line.contains('\n'), "one line: {line}");
            assert_eq!(ToPopover::parse(&line), Some(o.clone()), "{line}");
        }
        for bad in [
            "",
            "show a b",
            "show ../x",
            "toggle now",
            "open",
            "sweep {",
            "sweep-started 3",
            "memory {\"x\": 1}",
            "lunch {}",
        ] {
            assert_eq!(ToPopover::parse(bad), None, "{bad:?}");
        }
        let sweep = SweepLine {
            running: true,
            workload: "mlp".into(),
            device: "cpu".into(),
            message: "batch 64".into(),
            points: 2,
        };
        for t in [
            ToTray::Part(TrayPart::Sweep(Some(sweep))),
            ToTray::Project(Some("lm".into())),
            ToTray::Project(None),
            ToTray::Settings,
            ToTray::Loaded,
            ToTray::Sweep(crate::jobs::live::SweepOrder::Project {
                name: "lm".into(),
                devices: Some(String::new()),
            }),
            ToTray::CancelSweep,
            ToTray::Memory(crate::jobs::live_memory::MemoryOrder::Watch { pid: 7 }),
            ToTray::StopMemory,
            ToTray::OpenScreen("box".into()),
            ToTray::CloseScreen,
        ] {
            let line = t.line();
            assert!(!line.contains('\n'), "{line}");
            assert_eq!(serde_json::from_str::<ToTray>(&line).expect("reads"), t);
        }
    }
}
