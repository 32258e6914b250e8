//! The board the rules write on: the reasons found so far and each column's standing (a status
//! only ever worsens), what the measured rules found for the verdict to weigh, and each
//! column's standing strengths and risks.

use crate::table::{Column, Reason, Rule, Status};

pub(crate) fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

pub(crate) fn standing(c: Column) -> (Vec<String>, Vec<String>) {
    let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect();
    match c {
        Column::Cpu => (
            v(&["runs every operator: nothing to port"]),
            v(&["throughput is capped by the cores"]),
        ),
        Column::Mps => (
            v(&["reuses your PyTorch code: `.to(\"mps\")`"]),
            v(&[
                "operator gaps (CPU fallback)",
                "numeric differences from CUDA",
            ]),
        ),
        Column::Mlx => (
            v(&["built for Apple Silicon and its unified memory"]),
            v(&["a second stack to learn, port to and maintain"]),
        ),
        Column::Remote => (
            v(&["isolation: promises you can keep (overnight, no call in the way)"]),
            v(&["running cost", "moving code and data"]),
        ),
    }
}

/// The reasons found so far and each column's standing, as the rules add to them.
pub(crate) struct Board {
    pub(crate) reasons: Vec<Reason>,
    pub(crate) status: [Status; 4],
}

impl Board {
    pub(crate) fn say(&mut self, rule: Rule, column: Column, text: String) {
        self.reasons.push(Reason { rule, column, text });
    }

    /// Raises a column's status to `s` (a column's status only ever worsens).
    pub(crate) fn set(&mut self, c: Column, s: Status) {
        let i = idx(c);
        self.status[i] = self.status[i].max(s);
    }

    pub(crate) fn usable(&self, c: Column) -> bool {
        self.status[idx(c)] != Status::Blocked
    }
}

pub(crate) fn idx(c: Column) -> usize {
    Column::ALL.iter().position(|x| *x == c).unwrap_or(0)
}

/// What the measured rules found that the verdict weighs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    pub(crate) remote_ok: bool,
    /// The accelerator against the CPU: faster enough, not, or unmeasured.
    pub(crate) accel_wins: Option<bool>,
    pub(crate) too_close: bool,
    pub(crate) leak_persists: bool,
    pub(crate) mlx_wins: bool,
}
