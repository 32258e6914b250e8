//! Byte sizes and memory budgets as people write them: `512MiB`, `12GiB`, `1.5GB`, `80%`.

use serde::{Deserialize, Serialize};

use crate::error::Invalid;

/// A memory budget as the user gave it, before the device's capacity is known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum BudgetSpec {
    /// Headroom's default for the device (see [`BudgetSpec::resolve`]).
    Default,
    /// An absolute number of bytes.
    Bytes(u64),
    /// A share of the device's capacity, in percent (0 < p ≤ 100).
    Percent(f64),
}

/// Share of the available memory Headroom takes by default, leaving the rest to the system.
pub const DEFAULT_BUDGET_SHARE: f64 = 0.9;

impl BudgetSpec {
    /// Parses `12GiB`, `800MB`, `1073741824`, `80%`, or `default`.
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("default") || t.eq_ignore_ascii_case("auto") {
            return Ok(Self::Default);
        }
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad_budget(text))?;
            if !(v > 0.0 && v <= 100.0) {
                return Err(Invalid(format!(
                    "budget {text:?} must be a share above 0% and at most 100%, e.g. 80%"
                )));
            }
            return Ok(Self::Percent(v));
        }
        let bytes = parse_bytes(t).map_err(|_| bad_budget(text))?;
        if bytes == 0 {
            return Err(Invalid(format!(
                "budget {text:?} is zero: nothing could run; give a size such as 8GiB or a share such as 80%"
            )));
        }
        Ok(Self::Bytes(bytes))
    }

    /// The budget in bytes on a device with `capacity` bytes in all and `available` free now.
    /// The default is [`DEFAULT_BUDGET_SHARE`] of what is available.
    pub fn resolve(self, capacity: u64, available: u64) -> u64 {
        match self {
            Self::Default => scale(available, DEFAULT_BUDGET_SHARE),
            Self::Bytes(b) => b,
            Self::Percent(p) => scale(capacity, p / 100.0),
        }
    }
}

/// Share of an accelerator's memory a sweep never counts as usable, whatever the budget: a batch
/// whose peak lands in the last few percent fits the two steps that verify it but runs out of
/// memory later as the caching allocator fragments (on an H200, vit-tiny at batch 4849 peaked at
/// 99 % of the device over its verifying steps and ran out of memory within 100 training steps).
pub const FRAGMENTATION_MARGIN: f64 = 0.05;

/// The most of an accelerator's `capacity` a sweep's budget may use (see
/// [`FRAGMENTATION_MARGIN`]).
pub fn accelerator_ceiling(capacity: u64) -> u64 {
    scale(capacity, 1.0 - FRAGMENTATION_MARGIN)
}

fn scale(bytes: u64, share: f64) -> u64 {
    // Lossy by design: budgets are rounded to the byte.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let v = (bytes as f64 * share) as u64;
    v
}

fn bad_budget(text: &str) -> Invalid {
    Invalid(format!(
        "budget {text:?} is not a size or a share; write e.g. 12GiB, 800MB or 80%"
    ))
}

/// Parses a byte size: a number with an optional unit (B, K/KB, KiB, M/MB, MiB, G/GB, GiB, T/TB, TiB).
pub fn parse_bytes(text: &str) -> Result<u64, Invalid> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| Invalid(format!("{text:?} is not a byte size (e.g. 12GiB)")))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" => 1e12,
        "tib" => 1024.0_f64.powi(4),
        other => {
            return Err(Invalid(format!(
            "{text:?} has an unknown unit {other:?}; use B, KB, KiB, MB, MiB, GB, GiB, TB or TiB"
        )))
        }
    };
    let bytes = value * mult;
    if !bytes.is_finite() || !(0.0..=1.8e19).contains(&bytes) {
        return Err(Invalid(format!("{text:?} is out of range")));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(bytes.round() as u64)
}

/// Formats bytes for people: `812 MiB`, `12.4 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    #[allow(clippy::cast_precision_loss)]
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_shares() {
        assert_eq!(
            BudgetSpec::parse("12GiB").ok(),
            Some(BudgetSpec::Bytes(12 << 30))
        );
        assert_eq!(
            BudgetSpec::parse("800MB").ok(),
            Some(BudgetSpec::Bytes(800_000_000))
        );
        assert_eq!(
            BudgetSpec::parse("1.5GiB").ok(),
            Some(BudgetSpec::Bytes(3 << 29))
        );
        assert_eq!(
            BudgetSpec::parse("80%").ok(),
            Some(BudgetSpec::Percent(80.0))
        );
        assert_eq!(
            BudgetSpec::parse("4096").ok(),
            Some(BudgetSpec::Bytes(4096))
        );
    }

    #[test]
    fn rejects_zero_and_nonsense() {
        for bad in [
            "0",
            "0GiB",
            "0%",
            "150%",
            "-3GB",
            "twelve",
            "12 parsecs",
            "",
        ] {
            assert!(BudgetSpec::parse(bad).is_err(), "{bad} should be refused");
        }
        let msg = BudgetSpec::parse("0")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("zero"), "{msg}");
    }

    #[test]
    fn resolves_against_capacity() {
        assert_eq!(BudgetSpec::Percent(50.0).resolve(1000, 10), 500);
        assert_eq!(BudgetSpec::Default.resolve(1000, 100), 90);
        assert_eq!(BudgetSpec::Bytes(7).resolve(1000, 100), 7);
    }

    #[test]
    fn formats_for_people() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
        assert_eq!(format_bytes(300 << 20), "300 MiB");
    }
}
