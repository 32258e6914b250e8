//! UTC timestamps as RFC 3339 text, without a calendar dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339_from_unix(secs)
}

/// Formats `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_from_unix(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// The time `days` ago, as RFC 3339 text (comparable with stored timestamps as text).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn days_ago(days: f64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339_from_unix(now.saturating_sub((days.max(0.0) * 86_400.0) as u64))
}

/// Seconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SSZ` text.
pub fn unix_from_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (the inverse of civil_from_days).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// Days from `a` to `b` (RFC 3339 texts).
#[allow(clippy::cast_precision_loss)]
pub fn days_between(a: &str, b: &str) -> Option<f64> {
    Some((unix_from_rfc3339(b)? - unix_from_rfc3339(a)?) as f64 / 86_400.0)
}

/// Proleptic Gregorian date of day `z` counted from 1970-01-01 (era-based day arithmetic).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_from_unix(1_796_027_655), "2026-11-30T08:34:15Z");
    }

    #[test]
    fn parses_what_it_formats() {
        for secs in [0, 951_782_400, 1_796_027_655, 4_102_444_799] {
            assert_eq!(
                unix_from_rfc3339(&rfc3339_from_unix(secs)),
                i64::try_from(secs).ok()
            );
        }
        assert_eq!(unix_from_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(unix_from_rfc3339("yesterday"), None);
        let d = days_between("2026-11-01T00:00:00Z", "2026-11-15T12:00:00Z");
        assert_eq!(d, Some(14.5));
    }
}
