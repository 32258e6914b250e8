//! Memory across epochs: the samples taken at each epoch boundary and the verdict on them —
//! growth from the first to the last epoch, the trend (least-squares slope per epoch), and
//! whether that looks like a leak, like allocator cache that `empty_cache` gives back, or stable;
//! plus "fast early, slow later" when throughput falls across epochs.

use serde::{Deserialize, Serialize};

/// What was measured at the end of one epoch (after the release policy ran).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochSample {
    /// 1-based.
    pub epoch: u32,
    /// Bytes held by live tensors on the device (allocator's allocated bytes); `None` where the
    /// device keeps no statistics (the CPU).
    pub live_bytes: Option<u64>,
    /// Bytes the allocator keeps cached beyond the live ones (reserved − allocated).
    pub cache_bytes: Option<u64>,
    /// The process footprint: `phys_footprint` on macOS (what the OS kills on), RSS on Linux.
    pub footprint_bytes: Option<u64>,
    pub seconds: f64,
    pub samples_per_s: Option<f64>,
    /// With a release at the epoch's end (`run --release`): the allocator's cache before it,
    /// so that `cache_bytes` against it is what the release gave back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub cache_before_bytes: Option<u64>,
}

/// The thresholds, with their defaults from field practice.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EpochThresholds {
    /// Growth over `over_epochs` epochs that makes a leak suspect (0.26: 26 % over 10 epochs).
    pub leak_growth: f64,
    pub over_epochs: u32,
    /// Throughput drop from the first to the last epoch that counts as slowing (0.15).
    pub slowdown: f64,
}

impl Default for EpochThresholds {
    fn default() -> Self {
        Self {
            leak_growth: 0.26,
            over_epochs: 10,
            slowdown: 0.15,
        }
    }
}

/// How one measure moved.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    pub first: f64,
    pub last: f64,
    /// (last − first) / first.
    pub growth: f64,
    /// Least-squares slope, units per epoch.
    pub slope_per_epoch: f64,
    /// The slope carried over the threshold's epoch count, relative to the first value: the
    /// number compared with the leak threshold, so runs of any length are judged alike.
    pub projected_growth: f64,
}

/// The verdict.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpochVerdictKind {
    /// Live memory (or the footprint where live memory is unknown) keeps growing.
    LeakSuspected,
    /// Live memory is flat but the allocator's cache grows: `empty_cache` at epoch ends gives it back.
    CacheGrowth,
    Stable,
    /// Fewer than three epochs: nothing to judge.
    TooShort,
}

/// The verdict with its reasons.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochVerdict {
    pub kind: EpochVerdictKind,
    pub live: Option<Trend>,
    pub cache: Option<Trend>,
    pub footprint: Option<Trend>,
    pub throughput: Option<Trend>,
    /// Throughput fell by more than the slowdown threshold from the first to the last epoch.
    pub slowing: bool,
    /// One line for people.
    pub reason: String,
}

/// Growth is reported from the first epoch to the last; the trend skips the first epoch when
/// there are three or more, because epoch 1 also warms up the allocator, the caches and the
/// DataLoader's workers (a clean three-epoch run must not look like a leak).
#[allow(clippy::cast_precision_loss)]
fn trend(values: &[(f64, f64)], over: u32) -> Option<Trend> {
    if values.len() < 2 {
        return None;
    }
    let fit = if values.len() >= WARM_UP_FROM {
        &values[1..]
    } else {
        values
    };
    let n = fit.len() as f64;
    let mx = fit.iter().map(|v| v.0).sum::<f64>() / n;
    let my = fit.iter().map(|v| v.1).sum::<f64>() / n;
    let sxx: f64 = fit.iter().map(|v| (v.0 - mx).powi(2)).sum();
    let sxy: f64 = fit.iter().map(|v| (v.0 - mx) * (v.1 - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let first = values[0].1;
    let last = values[values.len() - 1].1;
    let base = fit[0].1.abs().max(1.0);
    Some(Trend {
        first,
        last,
        growth: (last - first) / first.abs().max(1.0),
        slope_per_epoch: slope,
        projected_growth: slope * f64::from(over) / base,
    })
}

/// From this many epochs on, the first is left out of the trend as warm-up.
const WARM_UP_FROM: usize = 3;

/// Fewer epochs than this give a verdict the reason calls tentative.
const FIRM_FROM: usize = 5;

fn series(samples: &[EpochSample], f: impl Fn(&EpochSample) -> Option<f64>) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|s| Some((f64::from(s.epoch), f(s)?)))
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:+.0} %", x * 100.0)
}

/// Judges the samples of one run.
#[allow(clippy::cast_precision_loss)]
pub fn judge(samples: &[EpochSample], t: &EpochThresholds) -> EpochVerdict {
    let over = t.over_epochs.max(1);
    let live = trend(&series(samples, |s| s.live_bytes.map(|b| b as f64)), over);
    let cache = trend(&series(samples, |s| s.cache_bytes.map(|b| b as f64)), over);
    let footprint = trend(
        &series(samples, |s| s.footprint_bytes.map(|b| b as f64)),
        over,
    );
    let throughput = trend(&series(samples, |s| s.samples_per_s), over);
    let slowing = throughput
        .as_ref()
        .is_some_and(|tp| tp.growth <= -t.slowdown);
    let mut v = EpochVerdict {
        kind: EpochVerdictKind::Stable,
        live,
        cache,
        footprint,
        throughput,
        slowing,
        reason: String::new(),
    };
    if samples.len() < 3 {
        v.kind = EpochVerdictKind::TooShort;
        v.reason = format!(
            "{} epoch(s) measured; three or more are needed to judge growth",
            samples.len()
        );
        return v;
    }
    let threshold = format!("{} over {over} epochs", pct(t.leak_growth));
    // Live tensors are the leak measure where the device counts them; else the footprint.
    let (measure, name) = match (&v.live, &v.footprint) {
        (Some(l), _) if l.first > 0.0 => (Some(l), "live tensor memory"),
        (_, Some(f)) => (Some(f), "process footprint"),
        _ => (None, ""),
    };
    let grows = |tr: &Trend| tr.projected_growth >= t.leak_growth && tr.growth > 0.0;
    if let Some(m) = measure.filter(|m| grows(m)) {
        v.kind = EpochVerdictKind::LeakSuspected;
        v.reason = format!(
            "{name} grew {} from epoch 1 to {} (trend {} per {over} epochs, threshold {threshold}): a reference is probably kept across epochs",
            pct(m.growth),
            samples.len(),
            pct(m.projected_growth)
        );
    } else if let Some(c) = v.cache.as_ref().filter(|c| grows(c)) {
        v.kind = EpochVerdictKind::CacheGrowth;
        v.reason = format!(
            "live memory is flat but the allocator cache grew {} (trend {} per {over} epochs): `empty_cache` at epoch ends gives it back",
            pct(c.growth),
            pct(c.projected_growth)
        );
    } else {
        v.reason = match measure {
            Some(m) => format!(
                "{name} changed {} over {} epochs (trend {} per {over} epochs), under the {threshold} threshold",
                pct(m.growth),
                samples.len(),
                pct(m.projected_growth)
            ),
            None => "no memory measure was available".into(),
        };
    }
    if samples.len() < FIRM_FROM {
        v.reason.push_str(&format!(
            " (tentative: epoch 1 is warm-up, so only {} epoch(s) after it were judged; run {FIRM_FROM} or more for a firm verdict)",
            samples.len() - 1
        ));
    }
    if slowing {
        if let Some(tp) = &v.throughput {
            v.reason.push_str(&format!(
                "; throughput fell {} (fast early, slow later)",
                pct(tp.growth)
            ));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(live: &[u64], footprint: &[u64], sps: &[f64]) -> Vec<EpochSample> {
        (0..footprint.len())
            .map(|i| EpochSample {
                epoch: u32::try_from(i + 1).unwrap_or(0),
                live_bytes: live.get(i).copied(),
                cache_bytes: None,
                footprint_bytes: Some(footprint[i]),
                seconds: 1.0,
                samples_per_s: sps.get(i).copied(),
                cache_before_bytes: None,
            })
            .collect()
    }

    #[test]
    fn steady_growth_of_a_quarter_over_ten_epochs_is_a_leak_and_flat_is_stable() {
        let t = EpochThresholds::default();
        // +3 % of the first epoch per epoch: +27 % over 9 steps, trend +30 % per 10 epochs.
        let grow: Vec<u64> = (0..10).map(|i| 1000 + 30 * i).collect();
        let v = judge(&run(&[], &grow, &[]), &t);
        assert_eq!(v.kind, EpochVerdictKind::LeakSuspected, "{}", v.reason);
        assert!(
            v.reason.contains("process footprint grew +27 %"),
            "{}",
            v.reason
        );
        let flat: Vec<u64> = (0..10).map(|i| 1000 + (i % 2) * 5).collect();
        let v = judge(&run(&[], &flat, &[]), &t);
        assert_eq!(v.kind, EpochVerdictKind::Stable, "{}", v.reason);
        // Live tensors win over the footprint where the device counts them.
        let v = judge(&run(&flat, &grow, &[]), &t);
        assert_eq!(v.kind, EpochVerdictKind::Stable, "{}", v.reason);
    }

    #[test]
    fn cache_growth_short_runs_and_slowing() {
        let t = EpochThresholds::default();
        let mut s = run(&[1000; 5], &[5000; 5], &[100.0, 95.0, 90.0, 84.0, 80.0]);
        for (i, x) in s.iter_mut().enumerate() {
            x.cache_bytes = Some(1000 + 200 * i as u64);
        }
        let v = judge(&s, &t);
        assert_eq!(v.kind, EpochVerdictKind::CacheGrowth, "{}", v.reason);
        assert!(v.slowing);
        assert!(v.reason.contains("fast early, slow later"), "{}", v.reason);
        assert_eq!(judge(&s[..2], &t).kind, EpochVerdictKind::TooShort);
    }

    #[test]
    fn a_warm_up_first_epoch_is_no_leak_and_few_epochs_are_called_tentative() {
        let t = EpochThresholds::default();
        // Epoch 1 warms up (the allocator, the loader's workers), then the footprint is flat.
        let v = judge(&run(&[], &[600, 700, 701], &[]), &t);
        assert_eq!(v.kind, EpochVerdictKind::Stable, "{}", v.reason);
        assert!(v.reason.contains("tentative"), "{}", v.reason);
        assert!(
            v.reason.contains("only 2 epoch(s) after it"),
            "{}",
            v.reason
        );
        // Growing after the warm-up is still a leak, even over three epochs.
        let v = judge(&run(&[], &[600, 700, 800], &[]), &t);
        assert_eq!(v.kind, EpochVerdictKind::LeakSuspected, "{}", v.reason);
        // Five epochs or more: a firm verdict.
        let v = judge(&run(&[], &[600, 700, 700, 701, 700], &[]), &t);
        assert_eq!(v.kind, EpochVerdictKind::Stable, "{}", v.reason);
        assert!(!v.reason.contains("tentative"), "{}", v.reason);
    }
}
