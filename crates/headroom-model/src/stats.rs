//! Step-time statistics: percentiles and the warm-up settling rule.

/// The `q`-th percentile (0..=100) of `values` by linear interpolation; `None` when empty.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    #[allow(clippy::cast_precision_loss)]
    let rank = (q.clamp(0.0, 100.0) / 100.0) * (v.len() - 1) as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    #[allow(clippy::cast_precision_loss)]
    let frac = rank - lo as f64;
    Some(v[lo] + (v[hi] - v[lo]) * frac)
}

/// Arithmetic mean; `None` when empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    let n = values.len() as f64;
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / n)
}

/// Coefficient of variation (sample standard deviation over the mean); `None` for fewer than
/// two values or a mean of zero.
pub fn cv(values: &[f64]) -> Option<f64> {
    let m = mean(values).filter(|m| *m > 0.0 && values.len() >= 2)?;
    #[allow(clippy::cast_precision_loss)]
    let var = values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    Some(var.sqrt() / m)
}

/// A throughput is known when half its 95 % confidence interval is at most this share.
pub const KNOWN_WITHIN: f64 = 0.05;

/// The half-width of the 95 % confidence interval of the mean, as a share of the mean, for `n`
/// values with coefficient of variation `cv` (normal approximation: 1.96·cv/√n).
pub fn ci_share(cv: f64, n: usize) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    (n >= 2).then(|| 1.96 * cv / (n as f64).sqrt())
}

/// Warm-up is settled when the last `window` step times lie within `tolerance` (relative) of
/// their median.
pub fn settled(times: &[f64], window: usize, tolerance: f64) -> bool {
    if window == 0 || times.len() < window {
        return false;
    }
    let tail = &times[times.len() - window..];
    let Some(med) = percentile(tail, 50.0) else {
        return false;
    };
    med > 0.0 && tail.iter().all(|t| (t - med).abs() <= tolerance * med)
}

/// A figure as people read it in a sentence: three significant digits, thousands as `k` and
/// millions as `M` (`10041.0` → `10.0 k`, `7691.8` → `7.69 k`, `12.345` → `12.3`); tables and
/// tooltips keep the full value.
pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let (v, unit) = match x.abs() {
        a if a >= 999.5e3 => (x / 1e6, " M"),
        a if a >= 999.5 => (x / 1e3, " k"),
        _ => (x, ""),
    };
    let a = v.abs();
    let digits = if a >= 99.95 {
        0
    } else if a >= 9.995 {
        1
    } else if a >= 0.9995 || a == 0.0 {
        2
    } else {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let lead = (-a.log10()).floor() as usize;
        lead + 3
    };
    format!("{v:.digits$}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let v = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(3.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(5.0));
        assert_eq!(percentile(&[1.0, 2.0], 95.0), Some(1.95));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn settling_needs_a_quiet_window() {
        assert!(!settled(&[10.0, 3.0, 1.0], 3, 0.1));
        assert!(settled(&[10.0, 1.0, 1.05, 0.98], 3, 0.1));
        assert!(!settled(&[1.0, 1.0], 3, 0.1));
    }

    #[test]
    fn figures_in_sentences_have_three_significant_digits() {
        assert_eq!(super::sig3(10041.0), "10.0 k");
        assert_eq!(super::sig3(7691.8), "7.69 k");
        assert_eq!(super::sig3(999.7), "1.00 k");
        assert_eq!(super::sig3(12.345), "12.3");
        assert_eq!(super::sig3(0.01234), "0.0123");
        assert_eq!(super::sig3(2_500_000.0), "2.50 M");
        assert_eq!(super::sig3(391.0), "391");
    }
}
