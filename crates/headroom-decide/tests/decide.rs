//! The decision rules one by one, each at its boundary, then the table over realistic fact sets.

use headroom_decide::{
    decide, Column, DecideThresholds, EpochFact, Facts, FallbackFact, MlxFact, NumericsFact,
    RemoteFact, Rule, RunFact, SlowLayerFact, Status, SweepFact, WorkloadKind,
};

fn sweep(device_ms: f64, busy: Option<f64>) -> SweepFact {
    SweepFact {
        device: String::new(),
        run_id: 7,
        workload: "cnn".into(),
        batch: 64,
        step_ms: device_ms,
        samples_per_s: 64_000.0 / device_ms,
        gpu_busy: busy,
        peak_bytes: Some(3 << 30),
        oom_batches: Vec::new(),
        largest_fit: None,
        ci: None,
        energy: None,
    }
}

/// An Apple Silicon Mac with MPS ready, mlx installed and a reachable remote host.
fn mac() -> Facts {
    Facts {
        apple_silicon: true,
        mps_ready: Some(true),
        mlx_installed: Some(true),
        remotes: vec![RemoteFact {
            name: "rented-m4".into(),
            reachable: Some(true),
            detail: "RTT 31 ms".into(),
        }],
        ..Facts::default()
    }
}

/// CPU at 100 ms per step, MPS at `mps_ms`, GPU busy `busy`.
fn compared(mps_ms: f64, busy: Option<f64>) -> Facts {
    Facts {
        cpu: Some(sweep(100.0, None)),
        mps: Some(sweep(mps_ms, busy)),
        ..mac()
    }
}

fn t() -> DecideThresholds {
    DecideThresholds::default()
}

fn epochs(leak: bool, growth: f64, release: &str) -> EpochFact {
    EpochFact {
        run_id: 9,
        source: String::new(),
        leak,
        growth,
        epochs: 10,
        release: release.into(),
        slowing: false,
        throughput_change: None,
        cache_growth: None,
    }
}

#[test]
fn data_pipeline_fires_under_22_percent_faster_with_an_idle_gpu_not_at_22() {
    // 21.9 % faster (78.1 ms vs 100 ms) with the GPU busy 10 %: the pipeline is suspected.
    let d = decide(&compared(78.1, Some(0.10)), &t());
    assert!(d.fired(Rule::DataPipeline), "{:?}", d.reasons);
    let r = d
        .reasons
        .iter()
        .find(|r| r.rule == Rule::DataPipeline)
        .expect("reason");
    assert!(
        r.text.contains("21.9 % faster (threshold 22.0 %)"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains("busy 10.0 % of the time (threshold 18.0 %)"),
        "{}",
        r.text
    );
    assert_eq!(d.column(Column::Mps).status, Status::Risky);
    assert_eq!(d.verdict, Some(Column::Cpu));
    // Exactly 22 % faster is not "less than 22 %": MPS wins.
    let d = decide(&compared(78.0, Some(0.10)), &t());
    assert!(!d.fired(Rule::DataPipeline), "{:?}", d.reasons);
    assert_eq!(d.verdict, Some(Column::Mps));
    assert_eq!(d.column(Column::Mps).status, Status::Recommended);
    // Slow but busy (18 %, the threshold itself): not the pipeline.
    let d = decide(&compared(90.0, Some(0.18)), &t());
    assert!(!d.fired(Rule::DataPipeline));
    // Busy 17.9 %: the pipeline.
    assert!(decide(&compared(90.0, Some(0.179)), &t()).fired(Rule::DataPipeline));
    // GPU utilisation unknown: no pipeline claim.
    assert!(!decide(&compared(90.0, None), &t()).fired(Rule::DataPipeline));
}

#[test]
fn near_one_speedup_asks_for_placement_and_sync_checks() {
    // 100 / 91 = 1.099×: within ±10 %.
    let d = decide(&compared(91.0, Some(0.5)), &t());
    assert!(d.fired(Rule::NearOne), "{:?}", d.reasons);
    assert!(d.symptoms.iter().any(|s| s.action.contains(".to(device)")));
    // 100 / 90.8 = 1.101×: outside.
    assert!(!decide(&compared(90.8, Some(0.5)), &t()).fired(Rule::NearOne));
    // Slower than the CPU, also near 1×.
    assert!(decide(&compared(105.0, Some(0.5)), &t()).fired(Rule::NearOne));
}

#[test]
fn rosetta_blocks_the_apple_backends_and_says_fix_python() {
    let d = decide(
        &Facts {
            rosetta: true,
            ..compared(40.0, Some(0.9))
        },
        &t(),
    );
    assert_eq!(d.verdict, None);
    assert!(d.headline.starts_with("Fix Python first"));
    assert_eq!(d.column(Column::Mps).status, Status::Blocked);
    assert_eq!(d.column(Column::Mlx).status, Status::Blocked);
    assert_eq!(d.column(Column::Cpu).status, Status::Risky);
    assert!(d.symptoms.iter().any(|s| s.rule == Rule::Rosetta));
}

#[test]
fn a_leak_is_named_and_one_that_survives_release_sends_the_run_remote() {
    let d = decide(
        &Facts {
            epochs: Some(epochs(true, 0.31, "none")),
            ..compared(40.0, Some(0.9))
        },
        &t(),
    );
    assert!(d.fired(Rule::Leak));
    assert!(!d.fired(Rule::LeakPersists));
    assert_eq!(d.verdict, Some(Column::Mps));
    let persists = Facts {
        epochs: Some(epochs(true, 0.31, "none")),
        leak_with_release: Some(epochs(true, 0.28, "both")),
        ..compared(40.0, Some(0.9))
    };
    let d = decide(&persists, &t());
    assert!(d.fired(Rule::LeakPersists));
    assert_eq!(d.verdict, Some(Column::Remote));
    assert_eq!(d.column(Column::Remote).status, Status::Recommended);
    assert!(d.headline.contains("leak persists"), "{}", d.headline);
    // A released run that did not leak is no reason to move.
    let fixed = Facts {
        leak_with_release: Some(epochs(false, 0.02, "both")),
        ..persists
    };
    assert_eq!(decide(&fixed, &t()).verdict, Some(Column::Mps));
}

#[test]
fn oom_points_ask_for_a_smaller_batch() {
    let mut f = compared(40.0, Some(0.9));
    if let Some(m) = f.mps.as_mut() {
        m.oom_batches = vec![1024, 512];
    }
    let d = decide(&f, &t());
    let r = d
        .reasons
        .iter()
        .find(|r| r.rule == Rule::Oom)
        .expect("oom reason");
    assert_eq!(r.column, Column::Mps);
    assert!(
        r.text.contains("batch 512, 1024") && r.text.contains("max safe 64"),
        "{}",
        r.text
    );
    // A bisection's many failures, smallest first, and the largest batch that did fit.
    if let Some(m) = f.mps.as_mut() {
        m.oom_batches = vec![24815, 1260, 598, 412, 342, 312, 305, 301];
        m.largest_fit = Some(298);
    }
    let d = decide(&f, &t());
    let r = d
        .reasons
        .iter()
        .find(|r| r.rule == Rule::Oom)
        .expect("oom reason");
    assert!(
        r.text
            .contains("batch 301, 305, 312 and 5 more up to 24815")
            && r.text.contains("largest that fitted 298; recommended 64"),
        "{}",
        r.text
    );
}

#[test]
fn fast_early_then_slow_and_a_slow_layer_make_mps_risky() {
    let mut e = epochs(false, 0.05, "none");
    e.slowing = true;
    e.throughput_change = Some(-0.3);
    let d = decide(
        &Facts {
            epochs: Some(e),
            ..compared(40.0, Some(0.9))
        },
        &t(),
    );
    assert!(d.fired(Rule::FastThenSlow));
    assert!(d.reasons.iter().any(|r| r.text.contains("-30 %")));
    let slow = |share: f64| Facts {
        slow_layer: Some(SlowLayerFact {
            run_id: 5,
            name: "aten::_upsample_bilinear2d_aa".into(),
            share,
        }),
        ..compared(40.0, Some(0.9))
    };
    assert!(!decide(&slow(0.499), &t()).fired(Rule::SlowLayer));
    let d = decide(&slow(0.5), &t());
    assert!(d.fired(Rule::SlowLayer));
    assert!(
        d.reasons.iter().any(|r| r
            .text
            .contains("50.0 % of the GPU time (run 5; threshold 50.0 %)")),
        "{:?}",
        d.reasons
    );
    assert_eq!(
        d.column(Column::Mps).status,
        Status::Recommended,
        "risky but still the best here"
    );
}

#[test]
fn fallback_ops_for_two_weeks_mean_split_the_architecture_not_before() {
    let fb = |days: f64| Facts {
        fallback: Some(FallbackFact {
            ops: vec!["aten::_upsample_bilinear2d_aa.out".into()],
            days,
            runs: 12,
        }),
        ..compared(40.0, Some(0.9))
    };
    assert!(!decide(&fb(13.9), &t()).fired(Rule::Fallback));
    let d = decide(&fb(14.0), &t());
    assert!(d.fired(Rule::Fallback));
    assert!(d
        .reasons
        .iter()
        .any(|r| r.text.contains("12 runs over 14 days")));
}

#[test]
fn llm_inference_goes_to_mlx_and_cuda_parity_goes_remote() {
    let d = decide(
        &Facts {
            workload_kind: WorkloadKind::LlmInference,
            ..compared(40.0, Some(0.9))
        },
        &t(),
    );
    assert_eq!(d.verdict, Some(Column::Mlx));
    assert_eq!(d.column(Column::Mlx).status, Status::Recommended);
    let d = decide(
        &Facts {
            cuda_parity_required: true,
            ..compared(40.0, Some(0.9))
        },
        &t(),
    );
    assert_eq!(d.verdict, Some(Column::Remote));
    assert_eq!(d.column(Column::Mps).status, Status::Risky);
}

fn mlx(ratio: f64) -> MlxFact {
    MlxFact {
        run_id: 12,
        workload: "mlp".into(),
        batch: 256,
        torch_device: "mps".into(),
        torch_samples_per_s: 10_000.0,
        mlx_device: "Device(gpu, 0)".into(),
        mlx_samples_per_s: 10_000.0 * ratio,
    }
}

#[test]
fn mlx_measured_ten_percent_faster_is_recommended_not_below() {
    let faster = Facts {
        mlx: Some(mlx(1.10)),
        ..compared(50.0, Some(0.9))
    };
    let d = decide(&faster, &t());
    assert_eq!(d.verdict, Some(Column::Mlx), "{}", d.headline);
    assert!(d.fired(Rule::MlxFaster));
    let why = &d.column(Column::Mlx).reasons[0].text;
    assert!(
        why.starts_with("mlp at batch 256: MLX (Device(gpu, 0)) 11.0 k samples/s vs torch on mps 10.0 k samples/s (1.10×, run 12)"),
        "{why}"
    );
    let close = Facts {
        mlx: Some(mlx(1.099)),
        ..compared(50.0, Some(0.9))
    };
    let d = decide(&close, &t());
    assert_eq!(d.verdict, Some(Column::Mps), "{}", d.headline);
    assert!(!d.fired(Rule::MlxFaster));
    assert!(d.column(Column::Mlx).reasons[0]
        .text
        .contains("not 10.0 % faster"));
    // Where MLX cannot run (Linux, its CPU package measured), the figure is cited, nothing moves.
    let linux = Facts {
        mlx: Some(MlxFact {
            torch_device: "cpu".into(),
            mlx_device: "Device(cpu, 0)".into(),
            ..mlx(3.0)
        }),
        ..Facts::default()
    };
    let d = decide(&linux, &t());
    assert_eq!(d.verdict, Some(Column::Cpu));
    assert_eq!(d.column(Column::Mlx).status, Status::Blocked);
    assert!(d.fired(Rule::MlxFaster));
}

#[test]
fn contention_sends_the_run_remote_and_without_a_host_says_add_one() {
    let raised = vec![
        "conferencing and IDEs hold 10.0 GiB (31 % of 32.0 GiB RAM; threshold 25 %)".to_owned(),
    ];
    let d = decide(
        &Facts {
            contention: raised.clone(),
            ..compared(40.0, Some(0.9))
        },
        &t(),
    );
    assert_eq!(d.verdict, Some(Column::Remote));
    assert!(d
        .reasons
        .iter()
        .any(|r| r.rule == Rule::Contention && r.text.contains("31 % of 32.0 GiB")));
    assert_eq!(d.column(Column::Mps).status, Status::Risky);
    let d = decide(
        &Facts {
            contention: raised,
            remotes: Vec::new(),
            ..compared(40.0, Some(0.9))
        },
        &t(),
    );
    assert_eq!(d.verdict, Some(Column::Remote));
    assert!(d.headline.contains("headroom remote add"), "{}", d.headline);
    assert_eq!(d.column(Column::Remote).status, Status::Blocked);
}

#[test]
fn the_table_over_realistic_machines() {
    // A Linux box (the CI host): no MPS, no MLX; CPU is the verdict, no remote yet.
    let linux = Facts::default();
    let d = decide(&linux, &t());
    assert_eq!(d.verdict, Some(Column::Cpu));
    assert_eq!(d.column(Column::Mps).status, Status::Blocked);
    assert_eq!(d.column(Column::Mlx).status, Status::Blocked);
    assert_eq!(d.column(Column::Remote).status, Status::Blocked);
    // A fresh Mac with nothing measured: MPS, with the command that would measure it.
    let d = decide(&mac(), &t());
    assert_eq!(d.verdict, Some(Column::Mps));
    assert!(d.headline.contains("--compare cpu"), "{}", d.headline);
    // MPS not ready on a Mac (old macOS): CPU.
    let d = decide(
        &Facts {
            mps_ready: Some(false),
            mps_detail: "macOS 12.2 is older than 12.3".into(),
            ..mac()
        },
        &t(),
    );
    assert_eq!(d.verdict, Some(Column::Cpu));
    assert!(d.reasons.iter().any(|r| r.text.contains("12.2")));
    // A Mac measured 3× faster on MPS, everything calm: MPS recommended, every column has its
    // standing strengths and risks.
    let d = decide(&compared(33.0, Some(0.85)), &t());
    assert_eq!(d.verdict, Some(Column::Mps));
    assert!(d
        .reasons
        .iter()
        .any(|r| r.rule == Rule::Faster && r.text.contains("3.03×")));
    for c in &d.columns {
        assert!(!c.strengths.is_empty() && !c.risks.is_empty(), "{c:?}");
    }
    assert_eq!(d.column(Column::Remote).status, Status::Viable);
    // The same Mac with its only host down: remote risky.
    let mut down = compared(33.0, Some(0.85));
    down.remotes[0].reachable = Some(false);
    down.remotes[0].detail = "connection refused".into();
    assert_eq!(
        decide(&down, &t()).column(Column::Remote).status,
        Status::Risky
    );
    // Configured thresholds move the boundary: with 40 % required, a 35 % gain is not enough.
    let strict = DecideThresholds {
        pipeline_speedup: 0.40,
        ..t()
    };
    let d = decide(&compared(65.0, Some(0.5)), &strict);
    assert_eq!(d.verdict, Some(Column::Cpu));
}

/// The user's run on MPS: batch 32, 40 % of the step waiting for data, 2 % copying.
fn your_run(data_share: f64, copy_share: f64, pin_memory: bool) -> RunFact {
    RunFact {
        run_id: 12,
        command: "python train.py --epochs 3".into(),
        batch: Some(32),
        device: Some("mps".into()),
        steps: 300,
        samples_per_s: Some(410.5),
        step_ms: Some(78.0),
        data_share: Some(data_share),
        copy_share: Some(copy_share),
        num_workers: Some(0),
        pin_memory: Some(pin_memory),
        accumulation: Some(4),
        autocast: vec!["mps:float16".into()],
        peak_bytes: 5 << 30,
        ..RunFact::default()
    }
}

fn texts(d: &headroom_decide::Decision, rule: Rule) -> Vec<String> {
    d.reasons
        .iter()
        .filter(|r| r.rule == rule)
        .map(|r| r.text.clone())
        .collect()
}

#[test]
fn your_run_is_cited_with_its_figures_and_is_data_bound_from_half_the_step() {
    let f = Facts {
        run: Some(your_run(0.49, 0.0, false)),
        ..mac()
    };
    let d = decide(&f, &t());
    let mine = texts(&d, Rule::YourRun);
    assert_eq!(mine.len(), 1, "{mine:?}");
    for want in [
        "run 12 (`python train.py --epochs 3`) at batch 32",
        "410 samples/s",
        "gradient accumulation 4",
        "autocast mps:float16",
        "on mps",
    ] {
        assert!(mine[0].contains(want), "{want:?} in {}", mine[0]);
    }
    assert!(!d.fired(Rule::DataPipeline), "49 % is under the threshold");
    let d = decide(
        &Facts {
            run: Some(your_run(0.5, 0.0, false)),
            ..mac()
        },
        &t(),
    );
    let data = texts(&d, Rule::DataPipeline);
    assert_eq!(data.len(), 1);
    assert!(data[0].contains("50.0 % of the step"), "{}", data[0]);
    assert!(data[0].contains("num_workers above 0"), "{}", data[0]);
    // The reason stands in the run's column; the device stays the verdict (a faster loader,
    // not another device, is the fix), so the column is recommended with that risk named.
    let mps = d.column(Column::Mps);
    assert!(
        mps.reasons.iter().any(|r| r.rule == Rule::DataPipeline),
        "{mps:?}"
    );
    assert_eq!(d.verdict, Some(Column::Mps));
}

#[test]
fn pin_memory_is_advised_only_when_the_copies_were_measured_to_matter() {
    let advice = |copy: f64, pinned: bool| {
        let d = decide(
            &Facts {
                run: Some(your_run(0.7, copy, pinned)),
                ..mac()
            },
            &t(),
        );
        texts(&d, Rule::DataPipeline).join(" ")
    };
    assert!(
        !advice(0.02, false).contains("pin_memory"),
        "{}",
        advice(0.02, false)
    );
    assert!(!advice(0.099, false).contains("pin_memory"));
    let text = advice(0.25, false);
    assert!(text.contains("pin_memory=True"), "{text}");
    assert!(text.contains("copies take 25.0 % of the step"), "{text}");
    // Already pinned: nothing to advise about it.
    assert!(!advice(0.25, true).contains("pin_memory"));
    // No data-bound run, no loading advice at all, whatever the copies.
    let d = decide(
        &Facts {
            run: Some(your_run(0.1, 0.4, false)),
            ..mac()
        },
        &t(),
    );
    assert!(!d.fired(Rule::DataPipeline));
    // The symptom table's action no longer advises pinning unconditionally.
    let row = headroom_decide::SYMPTOMS
        .iter()
        .find(|s| s.rule == Rule::DataPipeline)
        .expect("row");
    assert!(
        row.action
            .contains("only where host-to-device copies were measured"),
        "{}",
        row.action
    );
}

#[test]
fn your_runs_oom_and_budget_are_reasons_citing_it() {
    let oom = RunFact {
        oom: Some("MPS backend out of memory (MPS allocated: 17.50 GB)\nmore".into()),
        ..your_run(0.1, 0.0, false)
    };
    let d = decide(
        &Facts {
            run: Some(oom),
            ..mac()
        },
        &t(),
    );
    let r = texts(&d, Rule::Oom);
    assert_eq!(r.len(), 1);
    assert!(r[0].contains("run 12 (`python train.py --epochs 3`) at batch 32 ran out of memory (MPS backend out of memory (MPS allocated: 17.50 GB))"), "{}", r[0]);
    let mps = d.column(Column::Mps);
    assert!(mps.reasons.iter().any(|r| r.rule == Rule::Oom), "{mps:?}");
    let over = RunFact {
        over_budget: Some(900 << 20),
        device: Some("cpu".into()),
        ..your_run(0.1, 0.0, false)
    };
    let d = decide(
        &Facts {
            run: Some(over),
            ..mac()
        },
        &t(),
    );
    let r = texts(&d, Rule::Oom);
    assert!(
        r[0].contains("went over its 900 MiB memory budget (peak 5.0 GiB)"),
        "{}",
        r[0]
    );
    assert_eq!(d.column(Column::Cpu).status, Status::Risky);
}

#[test]
fn a_leak_from_your_run_cites_its_source() {
    let e = EpochFact {
        source: "run 12 (`python train.py`) at batch 32".into(),
        ..epochs(true, 0.4, "none")
    };
    let d = decide(
        &Facts {
            epochs: Some(e),
            ..mac()
        },
        &t(),
    );
    let r = texts(&d, Rule::Leak);
    assert!(
        r[0].contains("(run 12 (`python train.py`) at batch 32, release none)"),
        "{}",
        r[0]
    );
    // Without a source, the run number alone, as before.
    let d = decide(
        &Facts {
            epochs: Some(epochs(true, 0.4, "none")),
            ..mac()
        },
        &t(),
    );
    assert!(texts(&d, Rule::Leak)[0].contains("(run 9, release none)"));
}

#[test]
fn your_runs_measured_data_share_decides_the_pipeline_rule_over_a_built_in_sweep() {
    // The built-in sweep alone suggests the pipeline (MPS 10 % faster, GPU busy 10 %).
    let sweeps = compared(90.0, Some(0.10));
    assert!(decide(&sweeps, &t()).fired(Rule::DataPipeline));
    // Your run waited on its DataLoader 5 % of the step: not the pipeline, whatever the sweep.
    let d = decide(
        &Facts {
            run: Some(your_run(0.05, 0.0, false)),
            ..sweeps.clone()
        },
        &t(),
    );
    assert!(!d.fired(Rule::DataPipeline), "{:?}", d.reasons);
    assert!(d.fired(Rule::YourRun));
    // It waited 60 %: the pipeline, said once, citing your run.
    let d = decide(
        &Facts {
            run: Some(your_run(0.6, 0.0, false)),
            ..sweeps
        },
        &t(),
    );
    let data = texts(&d, Rule::DataPipeline);
    assert_eq!(data.len(), 1, "{data:?}");
    assert!(data[0].starts_with("run 12 (`python train.py --epochs 3`) at batch 32: waiting for the DataLoader takes 60.0 % of the step"), "{}", data[0]);
}

#[test]
fn a_growing_cache_with_flat_live_tensors_is_named_not_called_a_leak() {
    let e = EpochFact {
        source: "run 12 (`python train.py`) at batch 32".into(),
        cache_growth: Some(0.6),
        ..epochs(false, 0.01, "none")
    };
    let d = decide(
        &Facts {
            epochs: Some(e.clone()),
            ..mac()
        },
        &t(),
    );
    let cache = texts(&d, Rule::CacheGrowth);
    assert_eq!(cache.len(), 1, "{:?}", d.reasons);
    assert!(cache[0].contains("cache grew +60 % over 10 epochs while live tensors stayed flat (run 12 (`python train.py`) at batch 32)"), "{}", cache[0]);
    assert!(!d.fired(Rule::Leak));
    assert!(d.symptoms.iter().any(|s| s.rule == Rule::CacheGrowth));
    // A leak verdict is a leak, whatever the cache did.
    let d = decide(
        &Facts {
            epochs: Some(EpochFact { leak: true, ..e }),
            ..mac()
        },
        &t(),
    );
    assert!(d.fired(Rule::Leak) && !d.fired(Rule::CacheGrowth));
}

#[test]
fn your_runs_gpu_busy_is_among_what_it_measured() {
    let d = decide(
        &Facts {
            run: Some(RunFact {
                gpu_busy: Some(0.15),
                ..your_run(0.1, 0.0, false)
            }),
            ..mac()
        },
        &t(),
    );
    let mine = texts(&d, Rule::YourRun);
    assert!(
        mine[0].contains("GPU busy 15.0 % of the run"),
        "{}",
        mine[0]
    );
}

/// CPU and MPS at `mps_ms` against 100 ms, each point known within ±`ci`.
fn compared_with_noise(mps_ms: f64, ci: f64) -> Facts {
    let mut f = compared(mps_ms, Some(0.9));
    for s in [f.cpu.as_mut(), f.mps.as_mut()].into_iter().flatten() {
        s.ci = Some(ci);
    }
    f
}

#[test]
fn a_difference_inside_the_measured_noise_fires_no_speed_rule() {
    // 25 % faster, 3 points over the 22 % threshold; each point ±5 %: the ratio's spread
    // carried to "faster" is 0.75 × √(0.05² + 0.05²) = 5.3 %, wider than the 3 points.
    let d = decide(&compared_with_noise(75.0, 0.05), &t());
    assert!(d.fired(Rule::WithinNoise), "{:?}", d.reasons);
    assert!(
        !d.fired(Rule::Faster) && !d.fired(Rule::DataPipeline),
        "{:?}",
        d.reasons
    );
    let r = d
        .reasons
        .iter()
        .find(|r| r.rule == Rule::WithinNoise)
        .expect("reason");
    assert!(
        r.text.contains("25.0 % faster ± 5.3 %") && r.text.contains("22.0 % threshold"),
        "{}",
        r.text
    );
    assert!(d.headline.contains("too close to call"), "{}", d.headline);
    assert_eq!(d.verdict, Some(Column::Mps), "at least as fast as the CPU");
    assert!(d.symptoms.iter().any(|s| s.rule == Rule::WithinNoise));
    // Slower than the threshold by as little: not called "only … faster" either.
    let d = decide(&compared_with_noise(80.0, 0.05), &t());
    assert!(
        d.fired(Rule::WithinNoise) && !d.fired(Rule::Faster),
        "{:?}",
        d.reasons
    );
    // The same difference measured tightly (±2 %: 2.1 % < 3 points) is called.
    let d = decide(&compared_with_noise(75.0, 0.02), &t());
    assert!(
        d.fired(Rule::Faster) && !d.fired(Rule::WithinNoise),
        "{:?}",
        d.reasons
    );
    assert_eq!(d.verdict, Some(Column::Mps));
    // A wide margin is called however noisy: 50 % faster ± 7 %.
    let d = decide(&compared_with_noise(50.0, 0.10), &t());
    assert!(
        d.fired(Rule::Faster) && !d.fired(Rule::WithinNoise),
        "{:?}",
        d.reasons
    );
    // No interval known (an older ledger): the thresholds alone, as before.
    assert!(decide(&compared(75.0, Some(0.9)), &t()).fired(Rule::Faster));
}

/// A run of `python train.py` on MPS at batch 32 with `sps` samples/s, a device peak and a step
/// time; `precision` is its autocast list.
fn practice_run(id: i64, sps: f64, peak_gib: f64, step_ms: f64, autocast: &[&str]) -> RunFact {
    RunFact {
        run_id: id,
        command: "python train.py --batch-size 32".into(),
        batch: Some(32),
        device: Some("mps".into()),
        steps: 50,
        samples_per_s: Some(sps),
        step_ms: Some(step_ms),
        accumulation: Some(1),
        autocast: autocast.iter().map(|s| (*s).to_owned()).collect(),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        peak_device_bytes: Some((peak_gib * f64::from(1u32 << 30)) as u64),
        peak_bytes: 8 << 30,
        ..RunFact::default()
    }
}

#[test]
fn mixed_precision_pays_from_its_threshold_and_warns_of_mps_numerics() {
    let without = practice_run(20, 400.0, 4.0, 80.0, &[]);
    // 10 % faster: exactly the threshold pays.
    let pays = Facts {
        amp: Some((
            practice_run(21, 440.0, 3.0, 72.0, &["mps:bfloat16"]),
            without.clone(),
        )),
        ..mac()
    };
    let d = decide(&pays, &t());
    let text = texts(&d, Rule::MixedPrecision);
    assert_eq!(text.len(), 1, "{text:?}");
    assert!(
        text[0].starts_with("autocast mps:bfloat16 pays here: +10 % samples/s, peak -25 %"),
        "{}",
        text[0]
    );
    assert!(
        text[0].contains("run 21") && text[0].contains("run 20"),
        "{}",
        text[0]
    );
    assert!(text[0].contains("never by bitwise losses"), "{}", text[0]);
    assert!(d.symptoms.iter().any(|s| s.rule == Rule::MixedPrecision));
    // 9 % faster: below it, keep full precision; float16 also names the GradScaler.
    let not = Facts {
        amp: Some((
            practice_run(22, 436.0, 3.0, 73.0, &["mps:float16"]),
            without,
        )),
        ..mac()
    };
    let text = texts(&decide(&not, &t()), Rule::MixedPrecision);
    assert!(text[0].contains("does not pay here: +9 %"), "{}", text[0]);
    assert!(text[0].contains("GradScaler"), "{}", text[0]);
}

#[test]
fn a_mixed_precision_gain_inside_the_runs_noise_is_not_called() {
    // +12 %, 2 points over the 10 % threshold; each run's mean step known within ±5 %: the
    // ratio's spread carried to the gain is 1.12 × √(0.05² + 0.05²) = 7.9 %, wider than that.
    let amp = |ci: Option<f64>, sps: f64| {
        let mut with = practice_run(51, sps, 3.0, 72.0, &["mps:bfloat16"]);
        let mut without = practice_run(50, 400.0, 4.0, 80.0, &[]);
        with.step_ci = ci;
        without.step_ci = ci;
        Facts {
            amp: Some((with, without)),
            ..mac()
        }
    };
    let d = decide(&amp(Some(0.05), 448.0), &t());
    assert!(
        d.fired(Rule::WithinNoise) && !d.fired(Rule::MixedPrecision),
        "{:?}",
        d.reasons
    );
    let text = texts(&d, Rule::WithinNoise);
    assert!(
        text[0]
            .starts_with("autocast mps:bfloat16 against full precision: +12 % ± 7.9 % samples/s")
            && text[0].contains("10.0 % threshold"),
        "{}",
        text[0]
    );
    // Measured tightly (±1 %: 1.6 % < 2 points) it is called.
    let d = decide(&amp(Some(0.01), 448.0), &t());
    assert!(
        d.fired(Rule::MixedPrecision) && !d.fired(Rule::WithinNoise),
        "{:?}",
        d.reasons
    );
    // A wide margin is called however noisy: +40 % ± 9.9 %.
    let d = decide(&amp(Some(0.05), 560.0), &t());
    assert!(texts(&d, Rule::MixedPrecision)[0].contains("pays here: +40 %"));
    // No spread known (an older ledger): the threshold alone, as before.
    assert!(decide(&amp(None, 448.0), &t()).fired(Rule::MixedPrecision));
}

#[test]
fn a_pair_timed_beside_other_work_is_disturbed_not_judged() {
    // The report that started this: +941 % "pays here" because the full-precision run was slowed
    // by other work. One side disturbed is enough to call nothing about speed.
    let mut without = practice_run(60, 40.0, 40.0, 80.0, &[]);
    without.disturbed = Some("other processes used 1.9 cores, python3 1.9 of them".into());
    let with = practice_run(61, 416.0, 3.8, 72.0, &["mps:bfloat16"]);
    let d = decide(
        &Facts {
            amp: Some((with.clone(), without.clone())),
            ..mac()
        },
        &t(),
    );
    assert!(
        d.fired(Rule::WithinNoise) && !d.fired(Rule::MixedPrecision),
        "{:?}",
        d.reasons
    );
    let text = texts(&d, Rule::WithinNoise);
    assert!(
        text[0].starts_with("autocast mps:bfloat16 against full precision: +940 % samples/s")
            && text[0].contains("run 60 was timed while other processes used 1.9 cores")
            && text[0].contains("disturbed, no verdict"),
        "{}",
        text[0]
    );
    // Both quiet: the same pair is judged.
    without.disturbed = None;
    let d = decide(
        &Facts {
            amp: Some((with, without.clone())),
            ..mac()
        },
        &t(),
    );
    assert!(d.fired(Rule::MixedPrecision), "{:?}", d.reasons);
    // Checkpointing's memory saving still counts; its time cost is not called.
    let mut ckpt = practice_run(62, 300.0, 9.0, 100.0, &[]);
    ckpt.checkpointing = true;
    ckpt.disturbed = Some("swap grew by 512 MiB".into());
    let d = decide(
        &Facts {
            checkpointing: Some((ckpt, without)),
            ..mac()
        },
        &t(),
    );
    let text = texts(&d, Rule::Checkpointing);
    assert!(
        text[0].contains("saves ")
            && text[0].contains(
                "; its cost per step is not judged: run 62 was timed while swap grew by 512 MiB"
            ),
        "{}",
        text[0]
    );
}

#[test]
fn checkpointing_states_memory_saved_against_time_lost_at_its_threshold() {
    let without = practice_run(30, 400.0, 10.0, 80.0, &[]);
    let mut with = practice_run(31, 300.0, 9.0, 100.0, &[]);
    with.checkpointing = true;
    let f = Facts {
        checkpointing: Some((with.clone(), without.clone())),
        ..mac()
    };
    let text = texts(&decide(&f, &t()), Rule::Checkpointing);
    assert_eq!(text.len(), 1);
    assert!(
        text[0].starts_with("activation checkpointing saves 10.0 % of peak memory (10.0 GiB to 9.0 GiB, -10 %) and costs +25 % per step at batch 32"),
        "{}",
        text[0]
    );
    assert!(text[0].contains("worth it"), "{}", text[0]);
    with.peak_device_bytes = Some(91 * (1 << 30) / 10);
    let f = Facts {
        checkpointing: Some((with, without)),
        ..mac()
    };
    let text = texts(&decide(&f, &t()), Rule::Checkpointing);
    assert!(text[0].contains("saves too little"), "{}", text[0]);
}

#[test]
fn a_changed_accumulation_asks_for_the_learning_rate_and_schedule_to_follow() {
    let mut old = practice_run(40, 400.0, 4.0, 80.0, &[]);
    let mut new = practice_run(41, 400.0, 4.0, 320.0, &[]);
    new.accumulation = Some(4);
    let f = Facts {
        rescale: Some((new.clone(), old.clone())),
        ..mac()
    };
    let text = texts(&decide(&f, &t()), Rule::Rescale);
    assert_eq!(text.len(), 1);
    assert!(
        text[0].starts_with("the effective batch changed from 32 (32 × 1 backward calls per step, run 40) to 128 (32 × 4, run 41): the optimizer now takes 0.25× the steps per epoch; scale the learning rate by 4.00 (linear rule; 2.00 by the square-root rule)"),
        "{}",
        text[0]
    );
    // The same effective batch split another way (64 × 2 against 128 × 1) needs nothing.
    old.batch = Some(128);
    new.batch = Some(64);
    new.accumulation = Some(2);
    let f = Facts {
        rescale: Some((new, old)),
        ..mac()
    };
    assert!(!decide(&f, &t()).fired(Rule::Rescale));
}

#[test]
fn a_stalled_loader_is_named_in_its_column_with_the_start_method_triage() {
    let mut run = practice_run(50, 400.0, 4.0, 80.0, &[]);
    run.start_method = Some("fork".into());
    run.stall = Some(headroom_model::observed::LoaderStall {
        after_step: 12,
        waited_s: 31.0,
        workers: 2,
        alive: 2,
        ended: false,
    });
    let f = Facts {
        run: Some(run.clone()),
        ..mac()
    };
    let d = decide(&f, &t());
    let text = texts(&d, Rule::LoaderHang);
    assert!(
        text[0].contains("no batch for 31 s after step 12, its 2 workers alive"),
        "{}",
        text[0]
    );
    assert!(text[0].contains("spawn"), "{}", text[0]);
    assert!(d
        .column(Column::Mps)
        .reasons
        .iter()
        .any(|r| r.rule == Rule::LoaderHang));
    // A stall that ended is named as one that went on.
    run.stall.as_mut().expect("stall").ended = true;
    let f = Facts {
        run: Some(run),
        ..mac()
    };
    let d = decide(&f, &t());
    assert!(texts(&d, Rule::LoaderHang)[0].contains("then it went on"));
}

/// Issue 38: on a machine without MPS or MLX whose user trained on CUDA, the headline names
/// that device and recommends no CPU over it; with no such run, the CPU as before.
#[test]
fn a_run_on_cuda_is_named_and_never_put_below_the_cpu() {
    let cuda_host = Facts {
        run: Some(RunFact {
            device: Some("cuda:0".into()),
            ..practice_run(31, 2300.0, 12.0, 55.0, &[])
        }),
        ..Facts::default()
    };
    let d = decide(&cuda_host, &t());
    assert_eq!(d.verdict, None, "{}", d.headline);
    assert!(
        d.headline
            .starts_with("CUDA: your newest run (run 31) trained on cuda:0 at 2.30 k samples/s"),
        "{}",
        d.headline
    );
    let cpu = Facts {
        run: None,
        ..cuda_host
    };
    assert_eq!(decide(&cpu, &t()).verdict, Some(Column::Cpu));
}

#[test]
fn more_workers_are_advised_only_as_far_as_the_ram_left_holds_them() {
    const GIB: u64 = 1 << 30;
    let run = RunFact {
        run_id: 70,
        command: "python train.py".into(),
        batch: Some(64),
        device: Some("mps".into()),
        steps: 200,
        samples_per_s: Some(900.0),
        step_ms: Some(71.0),
        data_share: Some(0.7),
        num_workers: Some(2),
        worker_bytes: Some(GIB),
        peak_bytes: 4 * GIB,
        ..RunFact::default()
    };
    let said = |available: u64| {
        let f = Facts {
            run: Some(run.clone()),
            ram_total: Some(16 * GIB),
            ram_available: Some(available),
            ..mac()
        };
        texts(&decide(&f, &t()), Rule::DataPipeline).join(" | ")
    };
    // 8 GiB available: 4 GiB go back to the run, 1.6 GiB stay free: two more 1 GiB workers fit.
    let roomy = said(8 * GIB);
    assert!(
        roomy.contains("raise num_workers above 2; each worker holds about 1.0 GiB: up to 2 more fit in the 8.0 GiB available beside the run's 4.0 GiB peak (a tenth of RAM kept free), 4 workers in all"),
        "{roomy}"
    );
    // 5 GiB available: nothing is left beside the run's peak and the tenth kept free.
    let tight = said(5 * GIB);
    assert!(
        tight.contains(
            "but each of its 2 workers holds about 1.0 GiB and only 5.0 GiB is available"
        ) && tight.contains("more workers would push this machine toward swap"),
        "{tight}"
    );
    // Without a measured worker, the advice stays as it was.
    let f = Facts {
        run: Some(RunFact {
            worker_bytes: None,
            ..run.clone()
        }),
        ram_total: Some(16 * GIB),
        ram_available: Some(5 * GIB),
        ..mac()
    };
    let plain = texts(&decide(&f, &t()), Rule::DataPipeline).join(" | ");
    assert!(
        plain.contains("raise num_workers above 2") && !plain.contains("holds about"),
        "{plain}"
    );
}

#[test]
fn on_battery_the_sweeps_most_efficient_batch_is_named_with_what_it_saves() {
    use headroom_model::summary::EnergyTradeoff;
    let trade = |on_battery: bool, energy_share: f64| EnergyTradeoff {
        efficient_batch: 32,
        efficient_samples_per_joule: 30.0,
        chosen_batch: 64,
        chosen_samples_per_joule: 21.0,
        speed_share: 0.91,
        energy_share,
        on_battery,
        text: String::new(),
    };
    let with = |on_battery_now: bool, t: EnergyTradeoff| {
        let mut f = compared(20.0, Some(0.9));
        f.on_battery = on_battery_now;
        if let Some(m) = f.mps.as_mut() {
            m.energy = Some(t);
        }
        decide(&f, &DecideThresholds::default())
    };
    // Timed on battery: the sentence with its figures, in the accelerator's column.
    let d = with(false, trade(true, 0.70));
    let r = d
        .reasons
        .iter()
        .find(|r| r.rule == Rule::Energy)
        .expect("energy rule");
    assert_eq!(r.column, Column::Mps);
    assert_eq!(
        r.text,
        "on battery, batch 32 gives 91 % of batch 64's speed for 70 % of its energy per sample (30.0 samples/J against 21.0) (sweep 7): where the charge matters more than the minutes, train at batch 32"
    );
    assert!(d.symptoms.iter().any(|s| s.rule == Rule::Energy));
    // On battery now, though plugged in when it was swept.
    let d = with(true, trade(false, 0.70));
    assert!(d
        .reasons
        .iter()
        .any(|r| r.rule == Rule::Energy && r.text.starts_with("on battery now: batch 32")));
    // On mains throughout, or a saving under a tenth: nothing said.
    assert!(!with(false, trade(false, 0.70)).fired(Rule::Energy));
    assert!(!with(true, trade(true, 0.91)).fired(Rule::Energy));
}

#[test]
fn measured_numerics_speak_in_the_mps_column_and_a_layer_that_differs_makes_it_risky() {
    let with = |within: bool, device: &str| {
        let mut f = compared(50.0, Some(0.8));
        f.numerics = Some(NumericsFact {
            run_id: 12,
            device: device.into(),
            dtype: "f32".into(),
            within,
            verdict: if within {
                "numerics: mps f32 agrees with cpu f32 within 1.0e-3 everywhere".into()
            } else {
                "numerics: layer `encoder.3.attn` on mps f32 differs from cpu f32 by 4.00 %".into()
            },
        });
        decide(&f, &t())
    };
    let mps = |d: &headroom_decide::Decision| {
        d.columns
            .iter()
            .find(|c| c.column == Column::Mps)
            .map(|c| (c.status, c.reasons.iter().any(|r| r.rule == Rule::Numerics)))
            .expect("mps")
    };
    let clean = with(true, "mps");
    assert_eq!(
        texts(&clean, Rule::Numerics),
        ["mps f32 agrees with cpu f32 within 1.0e-3 everywhere (run 12)"]
    );
    assert_eq!(mps(&clean), (Status::Recommended, true));
    let off = with(false, "mps");
    assert_eq!(
        texts(&off, Rule::Numerics),
        ["layer `encoder.3.attn` on mps f32 differs from cpu f32 by 4.00 % (run 12)"]
    );
    // Still the fastest here, so still the pick, with the measured risk in its column.
    assert_eq!(mps(&off), (Status::Recommended, true));
    let reason = off
        .reasons
        .iter()
        .find(|r| r.rule == Rule::Numerics)
        .expect("reason");
    assert_eq!(reason.column, Column::Mps);
    // A comparison elsewhere (a dtype on the CPU, a CUDA box) does not judge MPS.
    let cpu = with(false, "cpu");
    assert_eq!(mps(&cpu), (Status::Recommended, false));
    assert_eq!(
        cpu.reasons
            .iter()
            .find(|r| r.rule == Rule::Numerics)
            .map(|r| r.column),
        Some(Column::Cpu)
    );
}
