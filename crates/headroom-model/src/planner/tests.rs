//! The planner tests.

use super::*;

/// Drives a planner against a synthetic device whose peak is `base + per * batch` and that
/// runs out of memory above `capacity`; returns the batches run and how it ended.
fn drive(
    plan: BatchPlan,
    budget: u64,
    capacity: u64,
    predict: bool,
) -> (Vec<u32>, Vec<u32>, Limit) {
    drive_model(
        plan,
        budget,
        capacity,
        predict,
        |b| 1000 + 100 * u64::from(b),
        |_| None,
    )
}

/// `drive` against a device whose peak at a batch is `peak(batch)` (baseline 1000) and whose
/// throughput is `sps(batch)`.
fn drive_model(
    plan: BatchPlan,
    budget: u64,
    capacity: u64,
    predict: bool,
    peak_of: impl Fn(u32) -> u64,
    sps: impl Fn(u32) -> Option<f64>,
) -> (Vec<u32>, Vec<u32>, Limit) {
    let mut p = Planner::new(plan, budget, Some(1000), predict);
    let (mut ran, mut skipped) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        match p.next_step() {
            Next::Run { batch, .. } => {
                ran.push(batch);
                let peak = peak_of(batch);
                let status = if peak > capacity {
                    PointStatus::Oom
                } else if peak > budget {
                    PointStatus::OverBudget
                } else {
                    PointStatus::Ok
                };
                let ok = status == PointStatus::Ok;
                p.record(
                    batch,
                    status,
                    (status != PointStatus::Oom).then_some(peak),
                    if ok { sps(batch) } else { None },
                );
            }
            Next::Skip { batch, .. } => {
                skipped.push(batch);
                p.record(batch, PointStatus::OverBudget, None, None);
            }
            Next::Done { limit } => return (ran, skipped, limit),
        }
    }
    panic!("planner did not finish");
}

#[test]
fn doubles_then_bisects_to_within_two_percent_of_the_budget() {
    // Budget fits batch (100_000 - 1000) / 100 = 990.
    let (ran, skipped, limit) = drive(
        BatchPlan::Search {
            start: 1,
            max: 1 << 20,
        },
        100_000,
        u64::MAX,
        true,
    );
    assert_eq!(limit, Limit::Budget);
    assert_eq!(&ran[..4], &[1, 2, 4, 8]);
    let best_fit = ran
        .iter()
        .copied()
        .filter(|b| 1000 + 100 * u64::from(*b) <= 100_000)
        .max();
    let best_fit = best_fit.unwrap_or(0);
    assert!(
        best_fit <= 990 && f64::from(best_fit) >= 990.0 * 0.98,
        "found {best_fit}"
    );
    // Prediction is exact on a linear device, so nothing over budget was ever run.
    assert!(
        ran.iter().all(|b| 1000 + 100 * u64::from(*b) <= 100_000),
        "ran {ran:?}"
    );
    assert!(!skipped.is_empty());
}

/// Throughput that saturates: each doubling gains less, the first gain under 10 % is
/// 256 -> 512 (+5.9 %, after +11 %).
fn knee_at_256(b: u32) -> Option<f64> {
    let b = f64::from(b);
    Some(1000.0 * b / (b + 32.0))
}

#[test]
fn one_flat_doubling_among_steep_ones_is_noise_not_the_knee() {
    // Launch-bound: throughput grows with the batch, except one noisy point at 16 (reached
    // by a ×4 stride from 4).
    let noisy = |b: u32| Some(if b == 16 { 420.0 } else { f64::from(b) * 100.0 });
    let (ran, _, limit) = drive_model(
        BatchPlan::Search { start: 1, max: 64 },
        u64::MAX,
        u64::MAX,
        true,
        |b| 1000 + 100 * u64::from(b),
        noisy,
    );
    assert_eq!(ran, vec![1, 2, 4, 16, 32, 64]);
    assert_eq!(limit, Limit::MaxBatch);
}

/// The H200's vit-tiny training step (bench/results): flat at 36 ms up to batch 64 (kernel
/// launches), then growing with the batch at 0.27 ms per sample.
fn h200_vit(b: u32) -> Option<f64> {
    let b = f64::from(b);
    Some(b / (0.036_f64).max(0.000_27 * b))
}

#[test]
fn the_launch_bound_range_is_crossed_in_strides_of_four() {
    let (ran, _, limit) = drive_model(
        BatchPlan::Search {
            start: 1,
            max: 1 << 20,
        },
        500_000,
        u64::MAX,
        true,
        |b| 1000 + 100 * u64::from(b),
        h200_vit,
    );
    // ×4 while the step time is flat (1 -> 2 -> 4 -> 16 -> 64 -> 256); 64 -> 256 gained less
    // than ×3.6, so it doubles again until the plateau, then jumps to the memory line.
    assert_eq!(&ran[..6], &[1, 2, 4, 16, 64, 256], "ran {ran:?}");
    assert!(!ran.contains(&8) && !ran.contains(&32) && !ran.contains(&128));
    assert_eq!(limit, Limit::Budget);
    let fit = ran
        .iter()
        .copied()
        .filter(|b| 1000 + 100 * u64::from(*b) <= 500_000)
        .max()
        .unwrap_or(0);
    assert!(fit >= 4990 * 98 / 100, "ran {ran:?}");
    // Without prediction it never strides.
    let (plain, _, _) = drive_model(
        BatchPlan::Search { start: 1, max: 64 },
        u64::MAX,
        u64::MAX,
        false,
        |b| 1000 + 100 * u64::from(b),
        h200_vit,
    );
    assert_eq!(plain, vec![1, 2, 4, 8, 16, 32, 64]);
}

#[test]
fn a_plateau_jumps_to_the_predicted_limit_and_verifies_it() {
    // Linear device; budget fits 990. The doubling 256 -> 512 gains nothing, so the planner
    // goes straight to 980 (1 % under the line's answer), runs it, and stops on the
    // prediction that the batch 2 % above does not fit.
    let (ran, skipped, limit) = drive_model(
        BatchPlan::Search {
            start: 1,
            max: 1 << 20,
        },
        100_000,
        u64::MAX,
        true,
        |b| 1000 + 100 * u64::from(b),
        knee_at_256,
    );
    // 1 -> 2 -> 4 nearly doubled throughput twice: a ×4 stride to 16.
    assert_eq!(ran, vec![1, 2, 4, 16, 32, 64, 128, 256, 512, 980]);
    assert_eq!(skipped, vec![999]);
    assert_eq!(limit, Limit::Budget);
}

#[test]
fn a_line_that_underestimates_is_corrected_by_the_verified_point() {
    // Memory grows faster above 600 than the small points say (true limit 898): the jump
    // lands over budget, is measured there, and the next line through that point lands
    // within 2 % below the limit without ever answering a batch that does not fit.
    let peak = |b: u32| {
        let b = u64::from(b);
        1000 + 100 * b + if b > 600 { 10 * (b - 600) * 4 } else { 0 }
    };
    let limit_batch = (1..5000).filter(|b| peak(*b) <= 100_000).max().unwrap_or(0);
    let (ran, _, limit) = drive_model(
        BatchPlan::Search {
            start: 1,
            max: 1 << 20,
        },
        100_000,
        u64::MAX,
        true,
        peak,
        knee_at_256,
    );
    assert_eq!(limit, Limit::Budget);
    let fit = ran
        .iter()
        .copied()
        .filter(|b| peak(*b) <= 100_000)
        .max()
        .unwrap_or(0);
    assert!(
        fit <= limit_batch && f64::from(fit) >= f64::from(limit_batch) * 0.98,
        "found {fit} of {limit_batch}; ran {ran:?}"
    );
    // Few large points: the doubling stopped at 512, then at most three verifications.
    assert!(ran.iter().filter(|b| **b > 512).count() <= 3, "{ran:?}");
}

#[test]
fn peaks_that_step_with_block_sizes_never_run_a_point_over_budget() {
    // Reserved memory grows in blocks, so measured peaks step above the true line (here in
    // steps of 3000 bytes, 30 batches); the H200 showed it as a jump to 4246 over budget,
    // then 4215 and 4214 over by a few MB before 4213 fitted. Aiming 1 % under the line
    // lands fitting batches only: here 938 (the first line, through two stepped peaks, is
    // 4 % high), then 968, within 2 % of the limit.
    let peak = |b: u32| (1000 + 100 * u64::from(b)).div_ceil(3000) * 3000;
    let limit_batch = (1..5000).filter(|b| peak(*b) <= 100_000).max().unwrap_or(0);
    let (ran, _, limit) = drive_model(
        BatchPlan::Search {
            start: 1,
            max: 1 << 20,
        },
        100_000,
        u64::MAX,
        true,
        peak,
        knee_at_256,
    );
    assert_eq!(limit, Limit::Budget);
    let large: Vec<u32> = ran.iter().copied().filter(|b| *b > 512).collect();
    assert!(large.len() <= 2, "{ran:?}");
    assert!(large.iter().all(|b| peak(*b) <= 100_000), "{ran:?}");
    let fit = large.iter().copied().max().unwrap_or(0);
    assert!(
        f64::from(fit) >= f64::from(limit_batch) * 0.98,
        "found {fit} of {limit_batch}"
    );
}

#[test]
fn a_device_oom_below_the_line_narrows_geometrically() {
    // The line says 990 fits the budget, but the device fails above 700 with no peak to
    // learn from: the planner must still end within 2 % of 700, below it.
    let (ran, _, limit) = drive_model(
        BatchPlan::Search {
            start: 1,
            max: 1 << 20,
        },
        100_000,
        71_000,
        true,
        |b| 1000 + 100 * u64::from(b),
        knee_at_256,
    );
    assert_eq!(limit, Limit::Oom);
    let fit = ran
        .iter()
        .copied()
        .filter(|b| 1000 + 100 * u64::from(*b) <= 71_000)
        .max()
        .unwrap_or(0);
    assert!((686..=700).contains(&fit), "found {fit}; ran {ran:?}");
    assert!(ran.len() <= 20, "{ran:?}");
}

#[test]
fn oom_bounds_the_search_when_prediction_is_off() {
    let (ran, _, limit) = drive(
        BatchPlan::Search {
            start: 1,
            max: 4096,
        },
        u64::MAX,
        30_000,
        false,
    );
    assert_eq!(limit, Limit::Oom);
    assert!(ran.contains(&512), "{ran:?}");
    let fit = ran
        .iter()
        .copied()
        .filter(|b| 1000 + 100 * u64::from(*b) <= 30_000)
        .max()
        .unwrap_or(0);
    assert!((284..=290).contains(&fit), "found {fit}");
}

#[test]
fn max_batch_is_visited_exactly() {
    let (ran, skipped, limit) = drive(
        BatchPlan::Search { start: 4, max: 100 },
        u64::MAX,
        u64::MAX,
        true,
    );
    assert_eq!(ran, vec![4, 8, 16, 32, 64, 100]);
    assert!(skipped.is_empty());
    assert_eq!(limit, Limit::MaxBatch);
}

#[test]
fn explicit_list_stops_at_first_failure() {
    let plan = BatchPlan::Explicit {
        batches: vec![1, 10, 100, 1000],
    };
    let (ran, skipped, limit) = drive(plan, 50_000, u64::MAX, true);
    assert_eq!(ran, vec![1, 10, 100]);
    assert_eq!(skipped, vec![1000]);
    assert_eq!(limit, Limit::Budget);
}

#[test]
fn first_point_failing_ends_the_sweep() {
    let (ran, _, limit) = drive(BatchPlan::Search { start: 1, max: 64 }, 500, u64::MAX, true);
    assert_eq!(ran, vec![1]);
    assert_eq!(limit, Limit::Budget);
}

#[test]
fn an_error_ends_the_sweep() {
    let mut p = Planner::new(BatchPlan::Search { start: 1, max: 64 }, 100, None, true);
    assert_eq!(
        p.next_step(),
        Next::Run {
            batch: 1,
            predicted: None
        }
    );
    p.record(1, PointStatus::Error, None, None);
    assert_eq!(
        p.next_step(),
        Next::Done {
            limit: Limit::Error
        }
    );
}

/// A costly sweep against a device whose peak is `1000 + 100·batch`, OOM above `capacity`,
/// throughput `sps`: the batches run, the batches refused on prediction, and the end.
fn drive_costly(
    budget: u64,
    capacity: u64,
    sps: impl Fn(u32) -> f64,
) -> (Vec<u32>, Vec<u32>, Limit) {
    let (ran, skipped, limit, _) = drive_costly_planner(budget, capacity, sps);
    (ran, skipped, limit)
}

/// A costly planner searching from 16 (up to 65536) under `budget` bytes.
fn costly_planner(budget: u64) -> Planner {
    let plan = BatchPlan::Search {
        start: 16,
        max: 65536,
    };
    Planner::new(plan, budget, None, true).costly()
}

/// [`drive_costly`], with the planner as the sweep left it.
fn drive_costly_planner(
    budget: u64,
    capacity: u64,
    sps: impl Fn(u32) -> f64,
) -> (Vec<u32>, Vec<u32>, Limit, Planner) {
    let mut p = costly_planner(budget);
    let (mut ran, mut skipped) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        match p.next_step() {
            Next::Run { batch, .. } => {
                ran.push(batch);
                let peak = 1000 + 100 * u64::from(batch);
                let status = if peak > capacity {
                    PointStatus::Oom
                } else if peak > budget {
                    PointStatus::OverBudget
                } else {
                    PointStatus::Ok
                };
                let ok = status == PointStatus::Ok;
                p.record(
                    batch,
                    status,
                    (status != PointStatus::Oom).then_some(peak),
                    ok.then(|| sps(batch)),
                );
            }
            Next::Skip { batch, .. } => {
                skipped.push(batch);
                p.record(batch, PointStatus::OverBudget, None, None);
            }
            Next::Done { limit } => return (ran, skipped, limit, p),
        }
    }
    panic!("costly planner did not finish");
}

/// Measured in a CI run on a loaded machine (a 1400 MiB budget): the line from 16 and 64
/// underestimated the jump, which went 5 % over; the start that fitted below it put the
/// line's fit within the aim, so the next is refused on its prediction, not run 0.3 % over.
#[test]
fn a_jump_over_budget_then_a_fit_near_the_line_refuses_the_next_on_its_prediction() {
    let plan = BatchPlan::Search {
        start: 16,
        max: 65536,
    };
    let budget = 1400u64 << 20;
    let mut p = Planner::new(plan, budget, None, true).costly();
    for (batch, status, peak) in [
        (16, PointStatus::Ok, 634_101_760),
        (64, PointStatus::Ok, 646_770_688),
        (3079, PointStatus::OverBudget, 1_513_562_112),
        (2832, PointStatus::Ok, 1_436_094_464),
    ] {
        let sps = (status == PointStatus::Ok).then_some(f64::from(batch));
        p.record(batch, status, Some(peak), sps);
    }
    match p.next_step() {
        Next::Skip { batch, predicted } => {
            assert!(batch > 2832 && batch < 3079, "{batch}");
            assert!(predicted > budget);
        }
        other => panic!("the next must be refused on its prediction: {other:?}"),
    }
}

/// A start that failed at a batch the line says fits (its process held little before it
/// died): the gap narrows in the log, never one batch at a time.
#[test]
fn a_costly_failure_the_line_does_not_explain_narrows_geometrically() {
    let plan = BatchPlan::Search {
        start: 16,
        max: 65536,
    };
    let mut p = Planner::new(plan, 20 << 30, None, true).costly();
    let mut ran = Vec::new();
    for _ in 0..40 {
        match p.next_step() {
            Next::Run { batch, .. } => {
                ran.push(batch);
                // 300 MiB of runtime, 256 KiB a sample; batches over 300 fail at once.
                let peak = (300 << 20) + 262_144 * u64::from(batch);
                if batch > 300 {
                    p.record(batch, PointStatus::Oom, Some(300 << 20), None);
                } else {
                    p.record(batch, PointStatus::Ok, Some(peak), Some(f64::from(batch)));
                }
            }
            Next::Skip { batch, .. } => p.record(batch, PointStatus::OverBudget, None, None),
            Next::Done { .. } => break,
        }
    }
    assert!(ran.len() <= 16, "{ran:?}");
    assert!(ran.iter().any(|b| (250..=300).contains(b)), "{ran:?}");
}

/// The knee of `ran` under `sps` and the fitting batch below it.
fn knee_and_below(ran: &[u32], sps: impl Fn(u32) -> f64) -> (u32, u32) {
    let mut ok: Vec<u32> = ran.to_vec();
    ok.sort_unstable();
    let best = ok.iter().map(|b| sps(*b)).fold(0.0, f64::max);
    let knee = ok
        .iter()
        .copied()
        .find(|b| sps(*b) >= best * KNEE_SHARE)
        .expect("knee");
    let below = ok.iter().copied().rev().find(|b| *b < knee).expect("below");
    (knee, below)
}

/// Throughput that grows with the batch up to the fit (compute-bound): the two small points,
/// knee probes while the fit is far, then the line's fit verified — no more starts than the knee
/// needs anyway.
#[test]
fn a_costly_sweep_that_keeps_gaining_verifies_the_fit_it_jumps_to() {
    // Budget fits (200_000 - 1000) / 100 = 1990; throughput ∝ batch^0.6 (+52 % a doubling).
    let sps = |b: u32| f64::from(b).powf(0.6);
    let (ran, skipped, limit) = drive_costly(200_000, u64::MAX, sps);
    assert_eq!(limit, Limit::Budget);
    assert_eq!(
        &ran[..2],
        &[16, 64],
        "the memory line from two small points"
    );
    let probe = ran[2];
    assert!(
        (300..=400).contains(&probe),
        "halfway (in the log) from 64 to the fit: {ran:?}"
    );
    let fit = *ran.iter().max().expect("ran");
    assert!(
        (1910..=1990).contains(&fit),
        "the probes gained much: the line's fit, verified: {ran:?}"
    );
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0] > fit);
    assert!(ran.len() <= 5, "few processes: {ran:?}");
    let (knee, below) = knee_and_below(&ran, sps);
    assert!(
        f64::from(knee) / f64::from(below) <= COSTLY_KNEE_RATIO,
        "{ran:?}"
    );
}

/// Throughput that saturates (a data-bound script): the probes find the knee below the fit,
/// and the fit — the costliest start of all — is the line's prediction, not run.
#[test]
fn a_costly_sweep_whose_knee_is_found_below_the_fit_does_not_run_the_fit() {
    // Budget fits 1990; throughput saturates around 256.
    let sps = |b: u32| {
        let b = f64::from(b);
        2200.0 * b / (b + 20.0)
    };
    let (ran, skipped, limit, p) = drive_costly_planner(200_000, u64::MAX, sps);
    assert_eq!(
        limit,
        Limit::Budget,
        "the batch past the fit is refused on its prediction"
    );
    assert!(
        ran.iter().all(|b| *b < 1000),
        "the fit is never run: {ran:?}"
    );
    assert_eq!(skipped, vec![1991], "{skipped:?}");
    assert_eq!(p.unverified_fit(), Some(1990), "{ran:?}");
    assert!(ran.len() <= 5, "few processes: {ran:?}");
    let (knee, below) = knee_and_below(&ran, sps);
    assert!(
        f64::from(knee) / f64::from(below) <= COSTLY_KNEE_RATIO,
        "{ran:?}"
    );
    let top = *ran.iter().max().expect("ran");
    assert!(top > knee, "a batch above the knee bounds it: {ran:?}");

    // A largest batch allowed below the fit is not run once the knee is found either.
    let plan = BatchPlan::Search {
        start: 16,
        max: 1500,
    };
    let mut q = Planner::new(plan, 200_000, None, true).costly();
    let mut ran = Vec::new();
    loop {
        match q.next_step() {
            Next::Run { batch, .. } => {
                ran.push(batch);
                q.record(
                    batch,
                    PointStatus::Ok,
                    Some(1000 + 100 * u64::from(batch)),
                    Some(sps(batch)),
                );
            }
            Next::Skip { batch, .. } => panic!("nothing to refuse under max: {batch}"),
            Next::Done { .. } => break,
        }
        assert!(ran.len() < 20, "{ran:?}");
    }
    assert!(ran.iter().all(|b| *b < 1000), "{ran:?}");
    assert_eq!(q.unverified_fit(), None);

    // Verified, the fit is no prediction.
    let (ran, _, _) = drive_costly(200_000, u64::MAX, |b| f64::from(b).powf(0.6));
    assert!(ran.iter().any(|b| *b > 1900));
    let mut q = costly_planner(200_000);
    for b in ran {
        q.record(
            b,
            PointStatus::Ok,
            Some(1000 + 100 * u64::from(b)),
            Some(f64::from(b)),
        );
    }
    q.record(1991, PointStatus::OverBudget, None, None);
    assert_eq!(q.unverified_fit(), None);
}

/// Measured on the H200 (resnet50, 12 DataLoader workers, FakeData, 125 GiB budget): batch 16
/// at 717 samples/s and 2.0 GB, 64 at 1771 and 7.0 GB; the old plan ran 1231 next (42 s of a
/// 62 s sweep). The probe goes to 281 instead, and where that gained little, to the next probe.
#[test]
fn the_h200_imagenet_figures_probe_the_knee_before_the_fit() {
    let mut p = costly_planner(125u64 << 30);
    p.record(16, PointStatus::Ok, Some(2_009_071_616), Some(717.1));
    p.record(64, PointStatus::Ok, Some(7_048_527_872), Some(1771.3));
    let Next::Run { batch: probe, .. } = p.next_step() else {
        panic!("a probe")
    };
    assert!((250..=300).contains(&probe), "{probe}");
    p.record(probe, PointStatus::Ok, Some(29_706_158_080), Some(2147.1));
    let Next::Run { batch: next, .. } = p.next_step() else {
        panic!("another probe")
    };
    assert!(
        next > probe && next < 900,
        "+21 % over ×4.4 is slow: {next}"
    );

    // The H100 (80 GB, a 70 GiB budget): 64 read low, so 210 gained fast; the fit 694 is more
    // than 2.5 times above it, so a probe goes first — measured at 382, 2.6 % faster than 210,
    // it ends the search.
    let mut p = costly_planner(70u64 << 30);
    p.record(16, PointStatus::Ok, Some(2_009_071_616), Some(336.3));
    p.record(64, PointStatus::Ok, Some(7_048_527_872), Some(1031.7));
    p.record(210, PointStatus::Ok, Some(22_292_725_760), Some(1780.7));
    let Next::Run { batch: probe, .. } = p.next_step() else {
        panic!("a probe")
    };
    assert!((350..=420).contains(&probe), "{probe}");
    p.record(probe, PointStatus::Ok, Some(40_324_038_656), Some(1819.0));
    let Next::Skip { batch: past, .. } = p.next_step() else {
        panic!("the batch past the fit, refused")
    };
    assert!(past > 690, "{past}");
    p.record(past, PointStatus::OverBudget, None, None);
    assert!(matches!(
        p.next_step(),
        Next::Done {
            limit: Limit::Budget
        }
    ));
    assert!(
        p.unverified_fit().is_some_and(|f| f > 690),
        "{:?}",
        p.unverified_fit()
    );
}

/// The H200's first sweep of 2026-12-06: 281 read 1880 samples/s known only within ±18.6 %
/// (two other sweeps read it 2120), so 588 at 2095 looked 11 % faster and a probe at 850 ran
/// (31 s, slower). A gain within a noisy point's noise has not shown that the batch buys speed:
/// the search upward ends at 588, its fit refused on prediction. Without the noise, the probe.
#[test]
fn a_gain_within_the_noise_of_the_batch_below_ends_the_search_upward() {
    let ran = |noise: bool| {
        let mut p = costly_planner(125u64 << 30);
        for (b, peak, sps, n) in [
            (16, 2_009_071_616u64, 750.9, None),
            (64, 7_048_527_872, 1506.8, Some(0.102)),
            (281, 29_706_158_080, 1879.9, Some(0.186)),
            (588, 62_105_059_328, 2095.2, None),
        ] {
            p.record(b, PointStatus::Ok, Some(peak), Some(sps));
            if let (true, Some(n)) = (noise, n) {
                p.noisy(b, n);
            }
        }
        p.next_step()
    };
    let Next::Skip { batch: past, .. } = ran(true) else {
        panic!("the batch past the fit, refused: {:?}", ran(true))
    };
    assert!(past > 1200, "{past}");
    let Next::Run { batch: probe, .. } = ran(false) else {
        panic!("a probe above 588: {:?}", ran(false))
    };
    assert!((800..1200).contains(&probe), "{probe}");
}

/// The knee narrowed between points is the knee the summary names: a batch within its own
/// noise of 95 % of the best is the knee, and no start goes to the gap above it.
#[test]
fn the_knee_narrowed_is_judged_within_its_noise() {
    let gap = |noise: bool| {
        let mut p = costly_planner(1u64 << 40);
        for (b, sps, n) in [
            (16, 500.0, None),
            (64, 1500.0, None),
            (281, 1900.0, Some(0.12)),
            (1600, 2050.0, None),
        ] {
            p.record(
                b,
                PointStatus::Ok,
                Some(1000 + 100 * u64::from(b)),
                Some(sps),
            );
            if let (true, Some(n)) = (noise, n) {
                p.noisy(b, n);
            }
        }
        p.knee_gap()
    };
    // Read plainly, 281 is 7 % short of the best: the knee is 1600, 5.7 times 281, and the gap
    // between them is probed.
    let probe = gap(false).expect("a probe between 281 and 1600");
    assert!((600..750).contains(&probe), "{probe}");
    // Within its noise (capped at 10 %) 281 reaches 95 %: the knee is 281, 4.4 times 64.
    assert_eq!(gap(true), None);
}

/// A start is begun ahead when the batch below is noisy: the outcome speculated for the batch
/// measured now gains beyond that batch's noise, so the search goes on upward as it would when
/// the batch comes out still rising. On the H100 (resnet50, 12 workers, 64 read ±6.4 %) a gain
/// of 10 % over 64's plain figure fell within its noise: no start was begun beside 210, 382 ran
/// cold, and each sweep took 58 s instead of 36.
#[test]
fn a_start_is_begun_ahead_past_a_noisy_point() {
    let mut p = costly_planner(70u64 << 30);
    for (b, peak, sps, noise) in [
        (16, 2_009_071_616u64, 481.1, 0.065),
        (64, 7_048_527_872, 1376.7, 0.064),
    ] {
        p.record(b, PointStatus::Ok, Some(peak), Some(sps));
        p.noisy(b, noise);
    }
    let Next::Run {
        batch: probe,
        predicted,
    } = p.next_step()
    else {
        panic!("a probe above 64: {:?}", p.next_step())
    };
    let ahead = p.speculate(probe, predicted);
    // As it came out: 210 at 1744 samples/s (±8 %); the planner then asks for the next probe.
    p.record(probe, PointStatus::Ok, Some(22_292_725_760), Some(1744.3));
    p.noisy(probe, 0.081);
    let Next::Run { batch: next, .. } = p.next_step() else {
        panic!("a probe above {probe}: {:?}", p.next_step())
    };
    let ahead = ahead.unwrap_or_else(|| panic!("nothing begun beside {probe}; {next} came next"));
    assert!(
        p.accepts(next, ahead),
        "{ahead} begun ahead, {next} asked for"
    );
}

/// What a sweep begins ahead: the start the planner asks for next when the one measured now
/// comes out as foreseen, and nothing it would not ask for.
#[test]
fn the_next_start_is_foreseen_and_only_asked_for_when_the_outcome_needs_it() {
    let mut p = costly_planner(200_000);
    let peak = |b: u32| 1000 + 100 * u64::from(b);
    assert!(matches!(p.next_step(), Next::Run { batch: 16, .. }));
    assert_eq!(
        p.speculate(16, None),
        Some(64),
        "4× the first, whatever it measures"
    );
    p.record(16, PointStatus::Ok, Some(peak(16)), Some(160.0));
    assert!(matches!(p.next_step(), Next::Run { batch: 64, .. }));
    p.record(64, PointStatus::Ok, Some(peak(64)), Some(640.0));
    let Next::Run {
        batch: probe,
        predicted,
    } = p.next_step()
    else {
        panic!("the probe")
    };
    assert!(predicted.is_some() && probe > 64 && probe < 1000, "{probe}");
    let foreseen = p.speculate(probe, predicted).expect("the next probe");
    assert!(foreseen > probe && foreseen < 1990, "{foreseen}");
    let next_after = |mut q: Planner, batch: u32, sps: f64| {
        q.record(batch, PointStatus::Ok, Some(peak(batch)), Some(sps));
        loop {
            match q.next_step() {
                Next::Run { batch, .. } => return Some((batch, q)),
                Next::Skip { batch, .. } => q.record(batch, PointStatus::OverBudget, None, None),
                Next::Done { .. } => return None,
            }
        }
    };
    // The fit is far above: the next probe, whether this one gained little or much.
    let (slow, _) = next_after(p.clone(), probe, 700.0).expect("a probe");
    assert_eq!(slow, foreseen);
    let (fast, q) = next_after(p.clone(), probe, 640.0 * f64::from(probe) / 64.0).expect("a probe");
    assert_eq!(fast, foreseen);
    // No faster: the knee is below, the fit is refused on its prediction, nothing more runs
    // above the probe.
    assert!(next_after(p, probe, 640.0).is_none_or(|(b, _)| b < probe));

    // Within 2.5 times of the fit: foreseen slow, the next probe; it came out fast, so the fit
    // itself, verified — not the start begun ahead, which is not taken for it.
    let at = f64::from(fast) * 10.0;
    let r = q.clone();
    let predicted = r.predict_peak(fast);
    let ahead = r.speculate(fast, predicted).expect("the next probe");
    let (fit, r2) = next_after(r.clone(), fast, at).expect("the fit");
    assert!(fit > 1900 && ahead < fit, "{fit} {ahead}");
    assert!(!r2.accepts(fit, ahead));
    let (probe2, _) = next_after(r, fast, 640.0 * f64::from(probe) / 64.0 * 1.15).expect("probe");
    assert_eq!(probe2, ahead);
    drop(q);
}

/// A knee probe only has to land between its neighbours: a start begun ahead a little off the
/// probe (its peak predicted from a line that moved when the probe before it was measured)
/// serves in its place; one too far off, or past the fit, does not.
#[test]
fn a_start_begun_ahead_near_a_probe_serves_as_the_probe() {
    let mut p = costly_planner(200_000);
    p.record(16, PointStatus::Ok, Some(2600), Some(160.0));
    p.record(64, PointStatus::Ok, Some(7400), Some(640.0));
    let Next::Run { batch: probe, .. } = p.next_step() else {
        panic!("the probe")
    };
    let near = probe + probe / 10;
    assert!(p.accepts(probe, probe));
    assert!(p.accepts(probe, near), "{probe} {near}");
    assert!(!p.accepts(probe, probe * 2));
    assert!(!p.accepts(probe, 64), "already measured");
    assert!(!p.accepts(probe, 5000), "over the budget");
    // The two small points are no probes: only the batch itself.
    let mut q = costly_planner(200_000);
    assert!(matches!(q.next_step(), Next::Run { batch: 16, .. }));
    assert!(!q.accepts(16, 17));
}

#[test]
fn a_costly_sweep_narrows_after_an_oom_and_stops_on_an_error() {
    // The device runs out at (50_000 - 1000) / 100 = 490 while the budget says 1990.
    let (ran, _, limit) = drive_costly(200_000, 50_000, f64::from);
    assert_eq!(limit, Limit::Oom);
    let fit = ran
        .iter()
        .copied()
        .filter(|b| 1000 + 100 * u64::from(*b) <= 50_000)
        .max();
    assert!(fit.is_some_and(|f| f >= 400), "{ran:?}");
    assert!(ran.len() <= 12, "{ran:?}");
    let mut p = Planner::new(
        BatchPlan::Search {
            start: 16,
            max: 1024,
        },
        1 << 30,
        None,
        true,
    )
    .costly();
    assert!(matches!(p.next_step(), Next::Run { batch: 16, .. }));
    p.record(16, PointStatus::Error, None, None);
    assert_eq!(
        p.next_step(),
        Next::Done {
            limit: Limit::Error
        }
    );
}

/// Measured in CI on a loaded machine (a 1400 MiB budget): 16 at 630.5 samples/s, 64 at 617.8.
/// Two small points alone never end the search upward — the next start is a knee probe, and
/// only a probe no faster than the batches below it bends the curve.
#[test]
fn two_equally_fast_small_points_are_followed_by_a_probe_not_taken_for_the_knee() {
    let budget = 1400u64 << 20;
    let mut p = costly_planner(budget);
    p.record(16, PointStatus::Ok, Some(652_898_304), Some(630.5));
    p.record(64, PointStatus::Ok, Some(665_522_176), Some(617.8));
    let Next::Run { batch: probe, .. } = p.next_step() else {
        panic!("a probe, not a refusal: {:?}", p.next_step())
    };
    assert!(probe > 64, "{probe}");
    let fit = p.predicted_fit().expect("the line's fit");
    assert!(probe < fit, "a probe below the fit {fit}: {probe}");
    // The probe no faster than 16: now the knee is below it and the search upward ends.
    let peak = p.predict_peak(probe).expect("a prediction");
    p.record(probe, PointStatus::Ok, Some(peak), Some(600.0));
    match p.next_step() {
        Next::Skip { batch, predicted } => {
            assert!(batch > fit, "{batch}");
            assert!(predicted > budget);
        }
        other => panic!("the batch past the fit, refused: {other:?}"),
    }
}
