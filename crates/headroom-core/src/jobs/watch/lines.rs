//! What the command's output says: `headroom-step`/`headroom-data` markers, metric lines and
//! `--metric` patterns, and when a run's step times have settled. Pure functions of lines and times.

use super::*;

/// Step intervals left out before step time is judged settled: the first steps at a new
/// shape allocate memory and pick kernels.
pub const SETTLE_WARMUP: usize = 3;

/// Two windows of steps whose median step times differ by at most this share are settled.
pub const SETTLE_SPREAD: f64 = 0.05;

/// A window holds at least this many steps, and enough to last [`SETTLE_WINDOW_S`].
pub const SETTLE_MIN_STEPS: usize = 4;
pub const SETTLE_WINDOW_S: f64 = 0.5;

/// Given the times steps ended (seconds, increasing), the index of the step from which the
/// step time is settled: after [`SETTLE_WARMUP`] intervals, the last two windows of k intervals
/// (k: at least [`SETTLE_MIN_STEPS`] and [`SETTLE_WINDOW_S`] of steps, at most 64) have the same
/// median step time within [`SETTLE_SPREAD`]. Medians of windows, not single steps, so a loader
/// that stalls every few steps settles (the throughput is then measured over all the settled
/// steps, stalls included). `None`: not yet.
pub fn settled_from(at: &[f64]) -> Option<usize> {
    if at.len() < 2 {
        return None;
    }
    let iv: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
    let usable = iv.len().checked_sub(SETTLE_WARMUP)?;
    let median = crate::stats::percentile(&iv[SETTLE_WARMUP..], 50.0)?;
    if median <= 0.0 {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let k = ((SETTLE_WINDOW_S / median).ceil() as usize).clamp(SETTLE_MIN_STEPS, 64);
    if usable < 2 * k {
        return None;
    }
    let n = iv.len();
    let a = crate::stats::percentile(&iv[n - 2 * k..n - k], 50.0)?;
    let b = crate::stats::percentile(&iv[n - k..], 50.0)?;
    ((a - b).abs() <= SETTLE_SPREAD * b).then_some(n - 2 * k)
}

/// The line a script prints at the end of each training step so `run` can time its steps:
/// `headroom-step` (case ignored), alone or followed by anything.
pub fn is_step_marker(line: &str) -> bool {
    is_marker(line, "headroom-step")
}

/// The line a script prints when a step's batch is ready (after `next(loader)`, before the
/// forward pass): with step markers, it splits each step into its data and compute parts.
pub fn is_data_marker(line: &str) -> bool {
    is_marker(line, "headroom-data")
}

pub(super) fn is_marker(line: &str, word: &str) -> bool {
    let l = line.trim_start();
    l.get(..word.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(word))
        && l[word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric())
}

/// `headroom-metric NAME VALUE`: a metric the script reports (a validation loss, an accuracy),
/// kept with the run so that `ledger compare` can compare two runs' results. The name is one
/// word (letters, digits, `_ . / -`), the value a number; anything after it is ignored.
pub fn metric_line(line: &str) -> Option<(String, f64)> {
    let l = line.trim_start();
    let word = "headroom-metric";
    let rest = l
        .get(..word.len())
        .filter(|h| h.eq_ignore_ascii_case(word))
        .map(|_| &l[word.len()..])?;
    if !rest.starts_with([' ', '\t', ':']) {
        return None;
    }
    let mut parts = rest
        .trim_start_matches(':')
        .split(|c: char| c.is_whitespace() || c == '=')
        .filter(|p| !p.is_empty());
    let name = parts.next()?;
    let ok_name = name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'));
    let value: f64 = parts.next()?.parse().ok()?;
    (ok_name && value.is_finite()).then(|| (name.to_owned(), value))
}

/// Parses `NAME=REGEX` (`--metric`): the regex must compile and have a group for the value.
pub fn parse_metric_spec(spec: &str) -> Result<(String, regex::Regex), CoreError> {
    let bad = |why: String| {
        CoreError::InvalidInput(format!(
            "--metric {spec:?}: {why}; write NAME=REGEX with one group for the value, e.g. --metric 'val_acc=val acc ([0-9.]+)'"
        ))
    };
    let (name, pattern) = spec
        .split_once('=')
        .ok_or_else(|| bad("no `=` between the name and the regex".into()))?;
    if name.is_empty() || metric_line(&format!("headroom-metric {name} 0")).is_none() {
        return Err(bad(format!(
            "{name:?} is not a metric name (letters, digits, _ . / -)"
        )));
    }
    let re =
        regex::Regex::new(pattern).map_err(|e| bad(format!("the regex does not compile: {e}")))?;
    if re.captures_len() < 2 {
        return Err(bad("the regex has no group for the value".into()));
    }
    Ok((name.to_owned(), re))
}

pub use crate::config::DATA_BOUND_SHARE;

/// Data and compute parts of each step, from marker times (s): for every step after the first,
/// the data part runs from the previous step marker to the last data marker before this step
/// marker, the compute part from there to the step marker. (data ms, compute ms) per step.
pub fn split_steps(step_at: &[f64], data_at: &[f64]) -> Vec<(f64, f64)> {
    step_at
        .windows(2)
        .filter_map(|w| {
            let d = data_at.iter().copied().rfind(|d| *d > w[0] && *d <= w[1])?;
            Some(((d - w[0]) * 1e3, (w[1] - d) * 1e3))
        })
        .collect()
}

pub use crate::outcome::{OpTime, WatchOutcome, MPS_PROFILE_LOG_OPTIONS};
