//! Two runs side by side: what changed, what did not, and whether the training agrees within
//! a tolerance.

use super::*;

/// Two budgets within 5 % of the larger one: too close to explain a difference in speed or in
/// the batch chosen (19.9 GiB against 20.1 GiB is two machines' free memory, not a cause).
pub(super) fn within_a_twentieth(a: Option<u64>, b: Option<u64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.abs_diff(b).saturating_mul(20) <= a.max(b),
        _ => false,
    }
}

/// Facts left out of a comparison: they differ between any two runs and explain nothing, or
/// the training lines compare them already (precision, seed, accumulation, metrics).
pub(super) const NOT_COMPARED: [&str; 12] = [
    "dtype policy",
    "seed",
    "accumulation",
    "metrics",
    "arm64 proof",
    "status",
    "started",
    "finished",
    "note",
    "chosen batch",
    "peak memory",
    "apps holding memory",
];

/// How close two runs' metrics must be to agree (`ledger compare --tolerance`): an absolute
/// difference (`0.01`) or a share of the first run's value (`1%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    Absolute(f64),
    Relative(f64),
}

impl Default for Tolerance {
    /// 1 % of the first run's value.
    fn default() -> Self {
        Self::Relative(0.01)
    }
}

impl Tolerance {
    /// `0.01` or `1%`.
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        let bad = || {
            CoreError::InvalidInput(format!(
                "--tolerance {s:?}: give an absolute difference (0.01) or a share of the first run's value (1%)"
            ))
        };
        let t = s.trim();
        let (num, relative) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (t, false),
        };
        let v: f64 = num.parse().map_err(|_| bad())?;
        if !v.is_finite() || v < 0.0 {
            return Err(bad());
        }
        Ok(if relative {
            Self::Relative(v / 100.0)
        } else {
            Self::Absolute(v)
        })
    }

    /// The largest difference allowed from `base`.
    pub fn allowed(self, base: f64) -> f64 {
        match self {
            Self::Absolute(a) => a,
            Self::Relative(r) => r * base.abs(),
        }
    }

    pub fn describe(self) -> String {
        match self {
            Self::Absolute(a) => format!("±{a}"),
            Self::Relative(r) => format!("±{} %", r * 100.0),
        }
    }
}

/// Two user runs' metrics, precision, seeds and effective batch, side by side: what must agree
/// before their results may be compared, and whether their metrics agree within `tol`.
pub fn training_lines(a: &WatchOutcome, b: &WatchOutcome, tol: Tolerance) -> Vec<String> {
    let (oa, ob) = (a.observed.as_ref(), b.observed.as_ref());
    let (precision, seed) = (precision_text, seed_text);
    let mut out = vec![
        format!("  dtype policy: {} vs {}", precision(oa), precision(ob)),
        format!("  seed: {} vs {}", seed(oa), seed(ob)),
    ];
    let effective = |o: &WatchOutcome| {
        let accum = o
            .observed
            .as_ref()
            .and_then(|x| x.accumulation)
            .unwrap_or(1)
            .max(1);
        o.batch.map(|b| (b, accum, u64::from(b) * u64::from(accum)))
    };
    if let (Some((b0, k0, e0)), Some((b1, k1, e1))) = (effective(a), effective(b)) {
        if e0 == e1 {
            out.push(format!(
                "  effective batch: {e0} in both ({b0} × {k0} vs {b1} × {k1})"
            ));
        } else {
            #[allow(clippy::cast_precision_loss)]
            let ratio = e1 as f64 / e0 as f64;
            out.push(format!(
                "  effective batch: {e0} ({b0} × {k0} backward calls per step) vs {e1} ({b1} × {k1}): the second takes {:.2}× the optimizer steps per epoch; scale its learning rate by {ratio:.2} (linear rule; {:.2} by the square-root rule) and its schedule's step counts by {:.2} before comparing results",
                1.0 / ratio,
                ratio.sqrt(),
                1.0 / ratio
            ));
        }
    }
    let names: std::collections::BTreeSet<&String> =
        a.metrics.keys().chain(b.metrics.keys()).collect();
    if names.is_empty() {
        out.push(
            "  metrics: none reported (print `headroom-metric NAME VALUE`, or give `headroom run --metric NAME=REGEX`)"
                .into(),
        );
    }
    for name in names {
        match (a.metrics.get(name), b.metrics.get(name)) {
            (Some(x), Some(y)) => {
                let diff = (y - x).abs();
                let allowed = tol.allowed(*x);
                out.push(format!(
                    "  metric {name}: {x} vs {y} (difference {diff:.6}, {} {}){}",
                    if diff <= allowed { "within" } else { "OUTSIDE" },
                    tol.describe(),
                    if diff > allowed
                        && a.observed.as_ref().map(|o| &o.autocast)
                            != b.observed.as_ref().map(|o| &o.autocast)
                    {
                        ": the dtype policies differ, which alone moves results"
                    } else {
                        ""
                    }
                ));
            }
            (Some(x), None) => out.push(format!("  metric {name}: {x} vs not reported")),
            (None, Some(y)) => out.push(format!("  metric {name}: not reported vs {y}")),
            (None, None) => {}
        }
    }
    out
}

/// `ledger compare`: the figures at the batches both runs measured, then every recorded fact
/// that differs and could explain a difference (versions, power, thermal, threads, data, mount).
pub fn compare(ledger: &Ledger, a: i64, b: i64) -> Result<Vec<String>, CoreError> {
    compare_within(ledger, a, b, Tolerance::default())
}

/// [`compare`], with two user runs' metrics judged within `tol`.
pub fn compare_within(
    ledger: &Ledger,
    a: i64,
    b: i64,
    tol: Tolerance,
) -> Result<Vec<String>, CoreError> {
    let (ra, pa) = ledger.get_run(a)?;
    let (rb, pb) = ledger.get_run(b)?;
    let (xa, xb) = (recorded(ledger, a)?, recorded(ledger, b)?);
    let mut out = vec![format!(
        "run {} ({} of {} on {}, {}) vs run {} ({} of {} on {}, {})",
        ra.id,
        ra.kind,
        ra.workload,
        ra.device,
        ra.host,
        rb.id,
        rb.kind,
        rb.workload,
        rb.device,
        rb.host
    )];
    let mut common = 0;
    for p in &pa {
        let Some(q) = pb.iter().find(|q| q.batch == p.batch) else {
            continue;
        };
        if let (Some(x), Some(y)) = (p.samples_per_s, q.samples_per_s) {
            common += 1;
            let mem = match (p.peak_bytes, q.peak_bytes) {
                (Some(m), Some(n)) => format!(
                    ", peak {} vs {}",
                    headroom_model::budget::format_bytes(m),
                    headroom_model::budget::format_bytes(n)
                ),
                _ => String::new(),
            };
            out.push(format!(
                "  batch {}: {} vs {} samples/s ({:+.1} %){mem}",
                p.batch,
                headroom_model::stats::sig3(x),
                headroom_model::stats::sig3(y),
                (y / x - 1.0) * 100.0
            ));
        }
    }
    if common == 0 {
        out.push("  no batch measured in both runs".into());
    }
    let outcome = |r: &RunRecord| -> Option<WatchOutcome> {
        (r.kind == headroom_store::ledger::RunKind::Run)
            .then(|| serde_json::from_value(r.report.clone()?).ok())
            .flatten()
    };
    if let (Some(oa), Some(ob)) = (outcome(&ra), outcome(&rb)) {
        out.push("training practices and results:".into());
        out.extend(training_lines(&oa, &ob, tol));
    }
    let fa = facts(&ra, &xa);
    let fb = facts(&rb, &xb);
    let mut differ: Vec<String> = fa
        .iter()
        .zip(&fb)
        .filter(|((k, x), (k2, y))| k == k2 && x != y && !NOT_COMPARED.contains(k))
        .filter(|((k, _), _)| {
            *k != "budget" || !within_a_twentieth(ra.budget_bytes, rb.budget_bytes)
        })
        .map(|((k, x), (_, y))| format!("  {k}: {x} vs {y}"))
        .collect();
    // The machine's state while each was timed: heat, throttling, power source.
    let timed = |r: &RunRecord| outcome(r).and_then(|o| o.conditions);
    if let (Some(x), Some(y)) = (timed(&ra), timed(&rb)) {
        differ.extend(
            x.differences(&y)
                .into_iter()
                .map(|d| format!("  while timed, {d}")),
        );
    }
    for p in &pa {
        let Some(q) = pb.iter().find(|q| q.batch == p.batch) else {
            continue;
        };
        if let (Some(x), Some(y)) = (&p.conditions, &q.conditions) {
            differ.extend(
                x.differences(y)
                    .into_iter()
                    .map(|d| format!("  batch {} while timed, {d}", p.batch)),
            );
        }
    }
    if differ.is_empty() {
        out.push("facts that could explain a difference: none differ among those recorded".into());
    } else {
        out.push("facts that differ and could explain it:".into());
        out.extend(differ);
    }
    for (r, x) in [(&ra, &xa), (&rb, &xb)] {
        if x.conditions.is_none() {
            out.push(if r.host == headroom_probe::machine::hostname() {
                format!(
                    "run {} has no conditions recorded (power, battery, Low Power Mode, thermal): \
                     it predates them",
                    r.id
                )
            } else {
                format!(
                    "run {} has no conditions recorded (power, battery, Low Power Mode, thermal): \
                     it was recorded here from {}'s output, which does not carry them",
                    r.id, r.host
                )
            });
        }
    }
    Ok(out)
}
