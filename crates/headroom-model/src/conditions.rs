//! What the machine was doing while a job measured: its thermal state, whether it throttled,
//! its power source and Low Power Mode, CPU and GPU power, GPU utilisation and temperature,
//! sampled through the job ([`ConditionSample`]), and the energy it used — summed over a point,
//! an epoch or a run ([`TimedConditions`]) with the warnings a figure measured so carries. The
//! readings come from `headroom-probe`; everything here is arithmetic on them.

use serde::{Deserialize, Serialize};

/// The OS's thermal state, on `NSProcessInfo`'s scale (Linux and NVML map a throttle to
/// `Serious`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThermalState {
    Nominal,
    Fair,
    Serious,
    Critical,
}

/// One reading of the machine's state, `t` seconds into the job.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConditionSample {
    pub t: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal: Option<ThermalState>,
    /// The CPU or the GPU was clocked down for heat (or a hardware slowdown) since the last
    /// reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_battery: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub battery_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_power: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_watts: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_watts: Option<f64>,
    /// The GPU's busy share, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util: Option<f64>,
    /// The hottest temperature read (CPU or GPU), °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_c: Option<f64>,
    /// A cumulative energy counter, joules since an arbitrary origin (NVML, RAPL), when the
    /// platform has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
}

/// One power source as IOKit describes it (`IOPSGetPowerSourceDescription`, its keys as
/// `IOPSKeys.h` names them), read by the macOS layer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PowerSourceDescription {
    /// `Type`: `InternalBattery`, `UPS`.
    pub kind: Option<String>,
    /// `Power Source State`: `AC Power`, `Battery Power`.
    pub state: Option<String>,
    /// `Current Capacity` and `Max Capacity` (a percentage on Apple Silicon: max is 100).
    pub current_capacity: Option<i64>,
    pub max_capacity: Option<i64>,
    /// `Is Charging`, `Is Charged`.
    pub is_charging: Option<bool>,
    pub is_charged: Option<bool>,
    /// `Time to Empty`, minutes (-1: still estimating).
    pub time_to_empty: Option<i64>,
}

/// The least, mean and most of a reading over a span.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

impl Span {
    /// Over the values given; `None` when there are none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let (mut n, mut sum, mut min, mut max) = (0u32, 0.0, f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|v| v.is_finite()) {
            n += 1;
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        (n > 0).then(|| Self {
            min,
            mean: sum / f64::from(n),
            max,
        })
    }
}

/// The machine's state over a span of a job (a sweep point, an epoch, a run).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimedConditions {
    /// Readings in the span and the seconds it lasted.
    pub samples: u32,
    pub seconds: f64,
    /// The worst thermal state read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal_worst: Option<ThermalState>,
    /// The share of readings that found the machine throttled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_share: Option<f64>,
    /// On battery at any reading; Low Power Mode at any reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_battery: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_power: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub battery_percent: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_watts: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_watts: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_c: Option<Span>,
    /// Joules used over the span: the counter's difference where there is one, else the
    /// sampled power integrated over time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// Where the energy came from ("NVML energy counter", "power × time").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_source: Option<String>,
    /// Why a span read with a counter has no energy (too short for the counter's updates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_note: Option<String>,
    /// What this machine could not read (said once per job).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
    /// When the span began, in seconds since the Unix epoch: to line a point up with another
    /// tool's readings (`nvidia-smi`'s power, a script's own stamps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_unix: Option<f64>,
}

/// NVML's energy counter moves about every 0.1 s (measured on an H100 and an H200, median
/// spacing 99–101 ms): between two of its updates its power is exact (to the poll's precision),
/// so a span's power needs two updates inside it, at least this far apart — one whole interval.
/// The supervisor reads a built-in point through its steady steps (the warm-up's after the
/// first, the timed and the split ones: 0.28–0.36 s a point on an H100), which hold two to four.
pub const COUNTER_MIN_COVER_S: f64 = 0.09;

/// A throttled share at or above this marks a figure (one reading in ten).
pub const THROTTLE_WARN_SHARE: f64 = 0.1;

impl TimedConditions {
    /// [`Self::over`], with the energy from `edges` where they cover the span: the counter's
    /// value at each moment it moved (`(t, joules)`, polled every few milliseconds while a short
    /// span is timed; `polled`: the counter was polled through this span). A counter that moves
    /// every 100 ms (NVML's) read at a second's two ends is off by up to a fifth; between two
    /// of its own updates it is exact, and the span's energy is that mean power over the whole
    /// span. A polled span with fewer updates than that needs has no energy, and says why.
    pub fn over_edges(
        samples: &[ConditionSample],
        edges: &[(f64, f64)],
        polled: bool,
        from: f64,
        to: f64,
        source: Option<&str>,
    ) -> Self {
        let mut c = Self::over(samples, from, to, source);
        if let Some(w) = edge_watts(edges, from, to) {
            c.energy_j = Some(w * c.seconds);
            c.energy_source = Some(format!(
                "{}, read at its updates",
                source.unwrap_or("energy counter")
            ));
        } else if polled && c.energy_j.is_some() {
            let moved = edges.iter().filter(|(t, _)| *t >= from && *t <= to).count();
            c.energy_j = None;
            c.energy_source = None;
            c.energy_note = Some(format!(
                "not measured: {:.2} s is too short for the energy counter, which moved {moved} time{} in it",
                c.seconds,
                if moved == 1 { "" } else { "s" }
            ));
        }
        c
    }

    /// The readings with `from <= t <= to`, summed: the span `[from, to]` of a job sampled
    /// throughout. `source` names the energy counter the readings carry, if any.
    pub fn over(samples: &[ConditionSample], from: f64, to: f64, source: Option<&str>) -> Self {
        let inside: Vec<&ConditionSample> = samples
            .iter()
            .filter(|s| s.t >= from && s.t <= to)
            .collect();
        let mut c = Self::of(&inside, source);
        let covered = c.seconds;
        c.seconds = (to - from).max(0.0);
        // Readings every second cover a little less than the span: its energy is their mean
        // power over all of it.
        if covered > 0.0 && c.seconds > covered {
            c.energy_j = c.energy_j.map(|j| j * c.seconds / covered);
        }
        c
    }

    /// The readings given, summed (the span is from the first to the last).
    pub fn of(samples: &[&ConditionSample], source: Option<&str>) -> Self {
        let n = u32::try_from(samples.len()).unwrap_or(u32::MAX);
        let pick =
            |f: fn(&ConditionSample) -> Option<f64>| Span::of(samples.iter().filter_map(|s| f(s)));
        let any = |f: fn(&ConditionSample) -> Option<bool>| {
            let seen: Vec<bool> = samples.iter().filter_map(|s| f(s)).collect();
            (!seen.is_empty()).then(|| seen.iter().any(|b| *b))
        };
        let throttles: Vec<bool> = samples.iter().filter_map(|s| s.throttled).collect();
        #[allow(clippy::cast_precision_loss)]
        let throttled_share = (!throttles.is_empty())
            .then(|| throttles.iter().filter(|t| **t).count() as f64 / throttles.len() as f64);
        let seconds = match (samples.first(), samples.last()) {
            (Some(a), Some(b)) => (b.t - a.t).max(0.0),
            _ => 0.0,
        };
        let (energy_j, energy_source) = match energy(samples, source) {
            Some((j, s)) => (Some(j), Some(s)),
            None => (None, None),
        };
        Self {
            samples: n,
            seconds,
            thermal_worst: samples.iter().filter_map(|s| s.thermal).max(),
            throttled_share,
            on_battery: any(|s| s.on_battery),
            low_power: any(|s| s.low_power),
            battery_percent: pick(|s| s.battery_percent),
            cpu_watts: pick(|s| s.cpu_watts),
            gpu_watts: pick(|s| s.gpu_watts),
            gpu_util: pick(|s| s.gpu_util),
            temp_c: pick(|s| s.temp_c),
            energy_j,
            energy_source,
            energy_note: None,
            unavailable: Vec::new(),
            from_unix: None,
        }
    }

    /// Joules per sample (`samples` processed in the span), where the energy is known.
    pub fn joules_per_sample(&self, samples: f64) -> Option<f64> {
        self.energy_j
            .filter(|j| *j > 0.0)
            .and_then(|j| (samples > 0.0).then(|| j / samples))
    }

    /// The mean power over the span, watts, where its energy is known.
    pub fn watts(&self) -> Option<f64> {
        self.energy_j
            .filter(|j| *j > 0.0)
            .and_then(|j| (self.seconds > 0.0).then(|| j / self.seconds))
    }

    /// Joules per sample at `samples_per_s` through the span: its mean power over the rate.
    pub fn joules_per_sample_at(&self, samples_per_s: f64) -> Option<f64> {
        self.watts()
            .and_then(|w| (samples_per_s > 0.0).then(|| w / samples_per_s))
    }

    /// What may have skewed a figure measured in this span, for `what` ("point at batch 64"):
    /// throttling, a serious thermal state, battery power, Low Power Mode.
    pub fn warnings_for(&self, what: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(share) = self.throttled_share.filter(|s| *s >= THROTTLE_WARN_SHARE) {
            out.push(format!(
                "{what} was timed while the machine throttled ({:.0} % of its readings): its speed is lower than this machine gives cool",
                share * 100.0
            ));
        } else if let Some(t) = self.thermal_worst.filter(|t| *t >= ThermalState::Serious) {
            out.push(format!(
                "{what} was timed in a {} thermal state: its speed may be throttled",
                match t {
                    ThermalState::Critical => "critical",
                    _ => "serious",
                }
            ));
        }
        if self.on_battery == Some(true) {
            out.push(format!(
                "{what} was timed on battery power: plugged in, it may run faster"
            ));
        }
        if self.low_power == Some(true) {
            out.push(format!(
                "{what} was timed in Low Power Mode: the CPU and GPU were held back"
            ));
        }
        out
    }

    /// What differs between two spans that could explain a difference in speed (for
    /// `ledger compare`): throttling, thermal state, power source, Low Power Mode.
    pub fn differences(&self, other: &Self) -> Vec<String> {
        let mut out = Vec::new();
        let throttled = |c: &Self| c.throttled_share.is_some_and(|s| s >= THROTTLE_WARN_SHARE);
        if throttled(self) != throttled(other) {
            out.push(format!(
                "throttled: {} vs {}",
                yes_no(throttled(self)),
                yes_no(throttled(other))
            ));
        }
        if self.thermal_worst != other.thermal_worst
            && self.thermal_worst.is_some()
            && other.thermal_worst.is_some()
        {
            out.push(format!(
                "thermal state: {} vs {}",
                thermal_name(self.thermal_worst),
                thermal_name(other.thermal_worst)
            ));
        }
        if let (Some(a), Some(b)) = (self.on_battery, other.on_battery) {
            if a != b {
                out.push(format!(
                    "power: {} vs {}",
                    if a { "battery" } else { "mains" },
                    if b { "battery" } else { "mains" }
                ));
            }
        }
        if let (Some(a), Some(b)) = (self.low_power, other.low_power) {
            if a != b {
                out.push(format!("Low Power Mode: {} vs {}", yes_no(a), yes_no(b)));
            }
        }
        out
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn thermal_name(t: Option<ThermalState>) -> &'static str {
    match t {
        Some(ThermalState::Nominal) => "nominal",
        Some(ThermalState::Fair) => "fair",
        Some(ThermalState::Serious) => "serious",
        Some(ThermalState::Critical) => "critical",
        None => "unknown",
    }
}

/// The mean power between the first and the last counter update inside `[from, to]`, where
/// there are at least three and they cover half the span or more.
fn edge_watts(edges: &[(f64, f64)], from: f64, to: f64) -> Option<f64> {
    let inside: Vec<&(f64, f64)> = edges
        .iter()
        .filter(|(t, _)| *t >= from && *t <= to)
        .collect();
    let (first, last) = (inside.first()?, inside.last()?);
    let covered = last.0 - first.0;
    let rise = last.1 - first.1;
    // Half the span; on a short one (under 0.6 s) all but about three of a 0.1 s counter's
    // intervals, and one whole interval at least.
    let span = to - from;
    let enough = covered >= (span / 2.0).min(COUNTER_MIN_COVER_S.max(span - 0.3));
    (inside.len() >= 2 && covered > 0.0 && enough && rise >= 0.0).then(|| rise / covered)
}

/// The energy over the readings: the counter's rise from the first to the last reading that
/// carries it, else the sampled CPU and GPU power integrated over time (trapezoids).
fn energy(samples: &[&ConditionSample], source: Option<&str>) -> Option<(f64, String)> {
    let counted: Vec<f64> = samples.iter().filter_map(|s| s.energy_j).collect();
    if counted.len() >= 2 {
        let rise = counted.last()? - counted.first()?;
        if rise >= 0.0 {
            return Some((rise, source.unwrap_or("energy counter").to_owned()));
        }
    }
    let watts = |s: &ConditionSample| match (s.cpu_watts, s.gpu_watts) {
        (None, None) => None,
        (c, g) => Some(c.unwrap_or(0.0) + g.unwrap_or(0.0)),
    };
    let powered: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| watts(s).map(|w| (s.t, w)))
        .collect();
    if powered.len() < 2 {
        return None;
    }
    let joules = powered
        .windows(2)
        .map(|w| (w[1].0 - w[0].0).max(0.0) * (w[0].1 + w[1].1) / 2.0)
        .sum();
    Some((joules, "power × time".to_owned()))
}

/// The rise of a counter that wraps at `range` (RAPL's `energy_uj` at `max_energy_range_uj`):
/// a reading below the last one wrapped once.
pub fn wrapped_rise(last: u64, now: u64, range: u64) -> u64 {
    if now >= last {
        now - last
    } else {
        range.saturating_sub(last) + now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second-by-second series of a GPU under load: 300 W, its energy counter rising with it,
    /// that throttles from t = 6 to t = 8 s and runs on battery from t = 9 s.
    fn series() -> Vec<ConditionSample> {
        (0..=12)
            .map(|i| {
                let t = f64::from(i);
                ConditionSample {
                    t,
                    throttled: Some((6..=8).contains(&i)),
                    thermal: Some(if (6..=8).contains(&i) {
                        ThermalState::Serious
                    } else {
                        ThermalState::Nominal
                    }),
                    on_battery: Some(i >= 9),
                    gpu_watts: Some(300.0),
                    cpu_watts: Some(20.0),
                    gpu_util: Some(0.9),
                    energy_j: Some(1000.0 + 320.0 * t),
                    ..ConditionSample::default()
                }
            })
            .collect()
    }

    #[test]
    fn a_span_sums_its_readings_and_its_energy() {
        let s = series();
        let c = TimedConditions::over(&s, 0.0, 5.0, Some("NVML energy counter"));
        assert_eq!(c.samples, 6);
        assert!((c.seconds - 5.0).abs() < 1e-9);
        assert_eq!(c.throttled_share, Some(0.0));
        assert_eq!(c.thermal_worst, Some(ThermalState::Nominal));
        assert_eq!(c.on_battery, Some(false));
        let w = c.gpu_watts.expect("watts");
        assert!((w.min - 300.0).abs() < 1e-9 && (w.max - 300.0).abs() < 1e-9);
        // The counter's rise over 5 s at 320 W.
        assert!((c.energy_j.unwrap() - 1600.0).abs() < 1e-9);
        assert_eq!(c.energy_source.as_deref(), Some("NVML energy counter"));
        // 1600 J for 3200 samples.
        assert!((c.joules_per_sample(3200.0).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(c.joules_per_sample(0.0), None);
        // Without a counter: the same power integrated over the same time.
        let no_counter: Vec<ConditionSample> = s
            .into_iter()
            .map(|x| ConditionSample {
                energy_j: None,
                ..x
            })
            .collect();
        let c = TimedConditions::over(&no_counter, 0.0, 5.0, None);
        assert!((c.energy_j.unwrap() - 1600.0).abs() < 1e-9);
        assert_eq!(c.energy_source.as_deref(), Some("power × time"));
    }

    #[test]
    fn a_series_that_throttles_mid_point_warns_on_that_point_only() {
        let s = series();
        // Three points of a sweep: 0–4 s, 5–8 s (throttled from 6 s), 9–12 s (on battery).
        let points = [(0.0, 4.0), (5.0, 8.0), (9.0, 12.0)];
        let warnings: Vec<Vec<String>> = points
            .iter()
            .enumerate()
            .map(|(i, (a, b))| {
                TimedConditions::over(&s, *a, *b, None).warnings_for(&format!("point {i}"))
            })
            .collect();
        assert!(warnings[0].is_empty(), "{:?}", warnings[0]);
        assert_eq!(warnings[1].len(), 1, "{:?}", warnings[1]);
        assert!(
            warnings[1][0].starts_with(
                "point 1 was timed while the machine throttled (75 % of its readings)"
            ),
            "{}",
            warnings[1][0]
        );
        assert_eq!(
            warnings[2],
            ["point 2 was timed on battery power: plugged in, it may run faster"]
        );
        // Compared, the two points name their difference.
        let a = TimedConditions::over(&s, 5.0, 8.0, None);
        let b = TimedConditions::over(&s, 9.0, 12.0, None);
        assert_eq!(
            a.differences(&b),
            [
                "throttled: yes vs no",
                "thermal state: serious vs nominal",
                "power: mains vs battery"
            ]
        );
        // A span with no readings says nothing and claims nothing.
        let empty = TimedConditions::over(&s, 20.0, 30.0, None);
        assert_eq!(empty.samples, 0);
        assert!(empty.warnings_for("x").is_empty() && empty.energy_j.is_none());
    }

    #[test]
    fn a_span_of_a_quarter_second_or_more_takes_its_power_from_the_counters_updates() {
        // A counter that moves every 0.1 s at 300 W, its updates seen up to 5 ms late.
        let counter = |t: f64| 300.0 * (t / 0.1).floor() * 0.1;
        let edges: Vec<(f64, f64)> = (1..40)
            .map(|k| {
                let t = f64::from(k) * 0.1;
                (t + 0.005, counter(t + 1e-9))
            })
            .collect();
        let span = |from: f64, len: f64| {
            TimedConditions::over_edges(&[], &edges, true, from, from + len, None)
        };
        // Wherever a steady window of a built-in point (0.28 s or more) begins, it has its
        // power, and it is exact.
        for k in 0..20 {
            let s = span(1.0 + f64::from(k) * 0.005, 0.28);
            let w = s.energy_j.expect("energy") / s.seconds;
            assert!((w - 300.0).abs() < 1e-6, "{s:?}");
        }
        // A span holding one update only has none.
        assert_eq!(span(1.01, 0.15).energy_j, None);
        // A long span needs its updates over half of it: two of them 0.1 s apart do not give
        // a second its power (the counter was not polled through it).
        let sparse = [edges[10], edges[11]];
        let long = TimedConditions::over_edges(&[], &sparse, true, 1.0, 2.0, None);
        assert_eq!(long.energy_j, None);
    }

    #[test]
    fn a_counter_that_wraps_rises_by_what_it_counted() {
        assert_eq!(wrapped_rise(100, 350, 1000), 250);
        assert_eq!(wrapped_rise(900, 50, 1000), 150);
        assert_eq!(Span::of([]), None);
        let s = Span::of([1.0, f64::NAN, 3.0]).expect("span");
        assert_eq!((s.min, s.mean, s.max), (1.0, 2.0, 3.0));
    }

    #[test]
    fn a_short_span_takes_its_energy_from_the_counters_updates() {
        // A counter that moves every 0.1 s at 500 W; readings at 0.0 and 1.0 s that each saw
        // it up to 0.1 s late (stale): from their two ends alone a 1 s span reads 400 W.
        let counter = |t: f64| 500.0 * (t / 0.1).floor() * 0.1;
        let at = |t: f64, seen: f64| ConditionSample {
            t,
            energy_j: Some(counter(seen)),
            ..ConditionSample::default()
        };
        let samples = [at(0.0, 0.0), at(1.0, 0.8)];
        let ends = TimedConditions::over(&samples, 0.0, 1.0, Some("NVML energy counter"));
        assert!((ends.energy_j.unwrap() - 400.0).abs() < 1e-9);
        // The updates, each seen within 5 ms of when it happened.
        let edges: Vec<(f64, f64)> = (1..10)
            .map(|k| {
                let t = f64::from(k) * 0.1;
                (t + 0.005, counter(t + 1e-9))
            })
            .collect();
        let c = TimedConditions::over_edges(
            &samples,
            &edges,
            true,
            0.0,
            1.0,
            Some("NVML energy counter"),
        );
        assert!((c.energy_j.unwrap() - 500.0).abs() < 1e-6, "{c:?}");
        assert_eq!(
            c.energy_source.as_deref(),
            Some("NVML energy counter, read at its updates")
        );
        // Too few updates inside (two, 0.1 s apart, in a second): no figure, and why.
        let few = TimedConditions::over_edges(&samples, &edges[..2], true, 0.0, 1.0, None);
        assert_eq!(few.energy_j, None);
        assert_eq!(
            few.energy_note.as_deref(),
            Some("not measured: 1.00 s is too short for the energy counter, which moved 2 times in it")
        );
        // A span not polled (a long run read every second): its readings' figure.
        let long = TimedConditions::over_edges(&samples, &[], false, 0.0, 1.0, None);
        assert_eq!(long.energy_j, ends.energy_j);
    }
}
