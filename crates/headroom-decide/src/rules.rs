//! The rules, one function per group: the user's newest run, pairs of its runs (practices),
//! availability, speed, memory and its signs, MLX against torch, contention. Each writes its
//! reasons and statuses on the [`Board`]; none decides the verdict.

use headroom_model::budget::format_bytes;
use headroom_model::settings::{DecideThresholds, WorkloadKind};
use headroom_model::stats::sig3;

use crate::board::{pct, Board};
use crate::facts::{Facts, RunFact};
use crate::table::{Column, Rule, Status};

/// The reasons the user's newest run gives: what it measured, running out of memory, and a
/// data pipeline that bounds it (with `pin_memory` only where the copies were measured to matter).
pub(crate) fn your_run(r: &RunFact, ram: Option<(u64, u64)>, t: &DecideThresholds, b: &mut Board) {
    let column = r.column();
    let src = r.source();
    let mut measured = Vec::new();
    if let Some(sps) = r.samples_per_s {
        measured.push(format!("{} samples/s", sig3(sps)));
    }
    if let Some(ms) = r.step_ms {
        measured.push(format!("{} ms per iteration", sig3(ms)));
    }
    if let Some(a) = r.accumulation.filter(|a| *a > 1) {
        measured.push(format!("gradient accumulation {a}"));
    }
    if !r.autocast.is_empty() {
        measured.push(format!("autocast {}", r.autocast.join(", ")));
    }
    if let Some(d) = &r.device {
        measured.push(format!("on {d}"));
    }
    if let Some(b) = r.gpu_busy {
        measured.push(format!("GPU busy {} of the run", pct(b)));
    }
    if !measured.is_empty() {
        b.say(
            Rule::YourRun,
            column,
            format!("{src}: {}", measured.join(", ")),
        );
    }
    if let Some(budget) = r.over_budget {
        b.say(Rule::Oom, column, format!("{src} went over its {} memory budget (peak {}): use a smaller batch, or give it more memory", format_bytes(budget), format_bytes(r.peak_bytes)));
        b.set(column, Status::Risky);
    } else if let Some(msg) = &r.oom {
        b.say(
            Rule::Oom,
            column,
            format!(
                "{src} ran out of memory ({}): use a smaller batch and release the cache",
                msg.lines().next().unwrap_or_default()
            ),
        );
        b.set(column, Status::Risky);
    }
    if let Some(share) = r.data_share.filter(|s| *s >= t.data_share) {
        let mut advice = match r.num_workers {
            Some(0) => {
                "set num_workers above 0 (loading runs in the training process now)".to_owned()
            }
            Some(n) => format!("raise num_workers above {n}"),
            None => "raise num_workers".to_owned(),
        };
        if let Some(copy) = r
            .copy_share
            .filter(|c| *c >= headroom_model::observed::COPIES_MATTER)
        {
            if r.pin_memory != Some(true) {
                advice.push_str(&format!(
                    "; pin_memory=True with non_blocking copies (host-to-device copies take {} of the step)",
                    pct(copy)
                ));
            }
        }
        if let (Some(w), Some(n), Some((total, available))) = (
            r.worker_bytes.filter(|w| *w > 0),
            r.num_workers.filter(|n| *n > 0),
            ram,
        ) {
            advice.push_str(&workers_that_fit(w, n, r.peak_bytes, total, available));
        }
        b.say(Rule::DataPipeline, column, format!("{src}: waiting for the DataLoader takes {} of the step (threshold {}): the data pipeline bounds it, not the device; {advice}", pct(share), pct(t.data_share)));
        b.set(column, Status::Risky);
    }
    if let (Some(n), Some(share)) = (
        r.syncs_per_step,
        r.sync_share.filter(|s| *s >= t.sync_share),
    ) {
        let site = r
            .sync_site
            .as_ref()
            .map_or_else(String::new, |s| format!(", the first at {s}"));
        b.say(Rule::SyncPoints, column, format!("{src} syncs the host {n} time{} every iteration{site}: {} of the step waits on it (threshold {}); keep the loss as a tensor and call `.item()` every N steps or at the epoch's end", if n == 1 { "" } else { "s" }, pct(share), pct(t.sync_share)));
    }
}

/// The relative change from `base` to `x` (0.25 = 25 % more).
pub(crate) fn change(x: f64, base: f64) -> Option<f64> {
    (base > 0.0 && x.is_finite()).then(|| (x - base) / base)
}

/// A signed percentage: `+25 %`, `-8 %`.
pub(crate) fn signed_pct(x: f64) -> String {
    format!("{:+.0} %", x * 100.0)
}

/// The peak a run's comparison uses: the device allocator's where observed, else the process
/// tree's.
pub(crate) fn compared_peak(r: &RunFact) -> u64 {
    r.peak_device_bytes.unwrap_or(r.peak_bytes)
}

/// The reasons pairs of the user's runs give (mixed precision, checkpointing, accumulation),
/// and a DataLoader stall in the newest run.
pub(crate) fn practices(f: &Facts, t: &DecideThresholds, b: &mut Board) {
    if let Some((with, without)) = &f.amp {
        if let (Some(on), Some(off)) = (with.samples_per_s, without.samples_per_s) {
            let gain = change(on, off).unwrap_or(0.0);
            let peak = change(compared_peak(with) as f64, compared_peak(without) as f64)
                .map(|p| format!(", peak {}", signed_pct(p)))
                .unwrap_or_default();
            let both = format!("{} vs {}", with.source(), without.source());
            let disturbed = disturbance(with, without);
            // The ratio's interval from the two runs' (shares add in quadrature), carried to the
            // gain (with / without − 1): a gain this close to the threshold calls nothing.
            let noise = (1.0 + gain).abs()
                * with
                    .step_ci
                    .unwrap_or(0.0)
                    .hypot(without.step_ci.unwrap_or(0.0));
            if let Some(why) = disturbed {
                b.say(
                    Rule::WithinNoise,
                    with.column(),
                    format!(
                        "{} against full precision: {} samples/s{peak} ({both}), but {why}: disturbed, no verdict; measure both again on a quieter machine",
                        with.precision(),
                        signed_pct(gain),
                    ),
                );
            } else if noise > 0.0 && (gain - t.amp_gain).abs() < noise {
                b.say(
                    Rule::WithinNoise,
                    with.column(),
                    format!(
                        "{} against full precision: {} ± {} samples/s{peak} ({both}; the two runs' measured spread): too close to the {} threshold to call either way; measure both again on a quieter machine",
                        with.precision(),
                        signed_pct(gain),
                        pct(noise),
                        pct(t.amp_gain)
                    ),
                );
            } else {
                let mut text = if gain >= t.amp_gain {
                    format!("{} pays here: {} samples/s{peak} against full precision ({both}; threshold {})", with.precision(), signed_pct(gain), pct(t.amp_gain))
                } else {
                    format!("{} does not pay here: {} samples/s{peak} against full precision ({both}; threshold {}): keep full precision unless memory is the limit", with.precision(), signed_pct(gain), pct(t.amp_gain))
                };
                if with
                    .autocast
                    .iter()
                    .any(|a| a.ends_with("float16") && !a.ends_with("bfloat16"))
                {
                    text.push_str(
                        "; float16 training needs a GradScaler against underflowing gradients",
                    );
                }
                if with.column() == Column::Mps || without.column() == Column::Mps {
                    text.push_str("; MPS's mixed-precision numerics differ from CUDA's: judge it by validation metrics within a tolerance (`headroom ledger compare A B --tolerance 0.01`), never by bitwise losses");
                }
                b.say(Rule::MixedPrecision, with.column(), text);
            }
        }
    }
    if let Some((with, without)) = &f.checkpointing {
        let (m, n) = (compared_peak(with), compared_peak(without));
        let saved = change(m as f64, n as f64).map_or(0.0, |c| -c);
        let cost = match (with.step_ms, without.step_ms) {
            (Some(on), Some(off)) => {
                change(on, off).map(|c| format!(" and costs {} per step", signed_pct(c)))
            }
            _ => None,
        }
        .unwrap_or_else(|| " (step time not measured in both)".into());
        let verdict = if saved >= t.checkpoint_saving {
            "worth it where the memory saved lets a larger batch fit or keeps the run out of swap; otherwise the time is lost for nothing"
        } else {
            "it saves too little to pay for its recomputation: turn it off unless the batch does not fit without it"
        };
        b.say(
            Rule::Checkpointing,
            with.column(),
            format!(
                "activation checkpointing saves {} of peak memory ({} to {}, {}){cost} at batch {} ({} vs {}; threshold {} saved): {verdict}",
                pct(saved),
                format_bytes(n),
                format_bytes(m),
                signed_pct(-saved),
                with.batch.map_or_else(|| "?".into(), |b| b.to_string()),
                with.source(),
                without.source(),
                pct(t.checkpoint_saving)
            ) + &disturbance(with, without).map_or_else(String::new, |why| format!("; its cost per step is not judged: {why} — measure both again on a quieter machine")),
        );
    }
    if let Some((new, old)) = &f.rescale {
        if let (Some(e1), Some(e0)) = (new.effective_batch(), old.effective_batch()) {
            if e1 != e0 {
                let ratio = e1 as f64 / e0 as f64;
                b.say(
                    Rule::Rescale,
                    new.column(),
                    format!(
                        "the effective batch changed from {e0} ({} × {} backward calls per step, run {}) to {e1} ({} × {}, run {}): the optimizer now takes {:.2}× the steps per epoch; scale the learning rate by {:.2} (linear rule; {:.2} by the square-root rule) and the schedule's step counts (warm-up, decay) by {:.2} before comparing the two",
                        old.batch.unwrap_or(0),
                        old.accumulation.unwrap_or(1),
                        old.run_id,
                        new.batch.unwrap_or(0),
                        new.accumulation.unwrap_or(1),
                        new.run_id,
                        1.0 / ratio,
                        ratio,
                        ratio.sqrt(),
                        1.0 / ratio
                    ),
                );
            }
        }
    }
    if let Some(r) = &f.run {
        if let Some(stall) = &r.stall {
            let triage = headroom_model::observed::stall_triage(stall, r.start_method.as_deref());
            b.say(
                Rule::LoaderHang,
                r.column(),
                format!(
                    "{}: the DataLoader gave {}. {triage}",
                    r.source(),
                    stall.describe()
                ),
            );
            if !stall.ended {
                b.set(r.column(), Status::Risky);
            }
        }
    }
}

/// What is available at all: Rosetta, MPS and MLX, the remote hosts. Whether a host answered.
pub(crate) fn availability(f: &Facts, b: &mut Board) -> bool {
    if f.rosetta {
        b.say(Rule::Rosetta, Column::Mps, "the Python that runs your work is x86_64 under Rosetta: MPS and MLX are out of reach and the CPU is emulated; fix Python first".into());
        b.set(Column::Mps, Status::Blocked);
        b.set(Column::Mlx, Status::Blocked);
        b.set(Column::Cpu, Status::Risky);
    }
    if !f.apple_silicon {
        b.say(
            Rule::NotAvailable,
            Column::Mps,
            "not an Apple Silicon Mac: MPS and MLX do not exist here".into(),
        );
        b.set(Column::Mps, Status::Blocked);
        b.set(Column::Mlx, Status::Blocked);
    } else if f.mps_ready == Some(false) && !f.rosetta {
        b.say(
            Rule::NotAvailable,
            Column::Mps,
            format!("MPS is not ready: {}", f.mps_detail),
        );
        b.set(Column::Mps, Status::Blocked);
    }
    if f.apple_silicon && f.mlx_installed == Some(false) {
        b.say(
            Rule::NotAvailable,
            Column::Mlx,
            "mlx is not installed in this Python (`pip install mlx`)".into(),
        );
        b.set(Column::Mlx, Status::Risky);
    }
    let remote_ok = f.remotes.iter().any(|r| r.reachable == Some(true));
    if f.remotes.is_empty() {
        b.say(
            Rule::NoRemote,
            Column::Remote,
            "no remote host configured yet (`headroom remote add`)".into(),
        );
        b.set(Column::Remote, Status::Blocked);
    } else if !remote_ok {
        let names: Vec<String> = f
            .remotes
            .iter()
            .map(|r| format!("{} ({})", r.name, r.detail))
            .collect();
        b.say(
            Rule::RemoteDown,
            Column::Remote,
            format!(
                "no configured host answered its last check: {}",
                names.join("; ")
            ),
        );
        b.set(Column::Remote, Status::Risky);
    }
    remote_ok
}

/// Speed: the accelerator against the CPU at the same batch, and the sweeps' out-of-memory
/// points. Whether the accelerator won (None: unmeasured), and whether it was too close to call.
pub(crate) fn speed(f: &Facts, t: &DecideThresholds, b: &mut Board) -> (Option<bool>, bool) {
    let mut accel_wins = None;
    let mut too_close = false;
    if let (Some(cpu), Some(mps)) = (&f.cpu, &f.mps) {
        let faster = (cpu.step_ms - mps.step_ms) / cpu.step_ms;
        let speedup = cpu.step_ms / mps.step_ms;
        let on = if mps.device.is_empty() || mps.device == "mps" {
            "MPS"
        } else {
            mps.device.as_str()
        };
        let at = format!(
            "{} at batch {}: {} ms per step on {on} vs {} ms on the CPU ({}×, sweep run {}, baseline run {})",
            mps.workload, mps.batch, sig3(mps.step_ms), sig3(cpu.step_ms), sig3(speedup), mps.run_id, cpu.run_id
        );
        // The ratio's interval from the two points' (shares add in quadrature), carried to
        // "faster" (1 − device/CPU): a difference from the threshold inside it calls nothing.
        let noise = (1.0 - faster).abs() * cpu.ci.unwrap_or(0.0).hypot(mps.ci.unwrap_or(0.0));
        too_close = noise > 0.0 && (faster - t.pipeline_speedup).abs() < noise;
        if too_close {
            b.say(
                Rule::WithinNoise,
                Column::Mps,
                format!(
                    "{at}, {} faster ± {} (the two points' measured spread): too close to the {} threshold to call either way; measure both again on a quieter machine",
                    pct(faster),
                    pct(noise),
                    pct(t.pipeline_speedup)
                ),
            );
        } else {
            // The user's own run measured its DataLoader waits: that share decides whether the data
            // pipeline bounds the work (the built-in sweep's inputs live on the device and only
            // suggest it); the sweep stays the machine's speed check.
            let pipeline_measured = f.run.as_ref().is_some_and(|r| r.data_share.is_some());
            let idle = mps
                .gpu_busy
                .filter(|b| *b < t.gpu_busy && !pipeline_measured);
            let mut explained = false;
            if faster < t.pipeline_speedup {
                if let Some(busy) = idle {
                    explained = true;
                    b.say(Rule::DataPipeline, Column::Mps, format!("{at}, {} faster (threshold {}) while the GPU was busy {} of the time (threshold {}): suspect the data pipeline, not MPS", pct(faster), pct(t.pipeline_speedup), pct(busy), pct(t.gpu_busy)));
                    b.set(Column::Mps, Status::Risky);
                }
            }
            if (speedup - 1.0).abs() <= t.near_one {
                explained = true;
                b.say(
                    Rule::NearOne,
                    Column::Mps,
                    format!(
                        "{at}: near 1× (within ±{}); check device placement and synchronisation",
                        pct(t.near_one)
                    ),
                );
                b.set(Column::Mps, Status::Risky);
            }
            if faster >= t.pipeline_speedup {
                b.say(
                    Rule::Faster,
                    Column::Mps,
                    format!("{at}, {} faster than the CPU", pct(faster)),
                );
                accel_wins = Some(true);
            } else {
                accel_wins = Some(false);
                if !explained {
                    b.say(
                        Rule::Faster,
                        Column::Cpu,
                        format!(
                            "{at}: only {} faster than the CPU (threshold {})",
                            pct(faster),
                            pct(t.pipeline_speedup)
                        ),
                    );
                }
            }
        }
    } else if f.apple_silicon && !f.rosetta {
        b.say(Rule::Unmeasured, Column::Mps, "no sweep compares MPS with the CPU at the same batch yet: `headroom sweep --device mps --compare cpu`".into());
    }
    for (column, sweep) in [(Column::Cpu, &f.cpu), (Column::Mps, &f.mps)] {
        let Some(sweep) = sweep else { continue };
        if !sweep.oom_batches.is_empty() {
            // The batch the sweep chose is its max safe one unless a larger batch fitted.
            let chosen = match sweep.largest_fit {
                Some(b) => format!("largest that fitted {b}; recommended {}", sweep.batch),
                None => format!("max safe {}", sweep.batch),
            };
            b.say(Rule::Oom, column, format!("out of memory at batch {} in sweep {} ({chosen}{}): use a smaller batch and release the cache", batch_list(&sweep.oom_batches), sweep.run_id, sweep.peak_bytes.map(|b| format!(", {} peak", format_bytes(b))).unwrap_or_default()));
        }
    }
    (accel_wins, too_close)
}

/// Memory over epochs, the slow layer, CPU fallbacks, the workload's kind and CUDA parity.
/// Whether a leak persists with the release.
pub(crate) fn memory_and_signs(f: &Facts, t: &DecideThresholds, b: &mut Board) -> bool {
    if let Some(e) = &f.epochs {
        if e.leak {
            b.say(Rule::Leak, Column::Mps, format!("memory grew {:+.0} % over {} epochs ({}, release {}): suspect a reference leak", e.growth * 100.0, e.epochs, e.cite(), e.release));
        }
        if let Some(g) = e.cache_growth.filter(|_| !e.leak) {
            b.say(Rule::CacheGrowth, Column::Mps, format!("the allocator's cache grew {:+.0} % over {} epochs while live tensors stayed flat ({}): not a leak; empty_cache at epoch ends gives it back", g * 100.0, e.epochs, e.cite()));
        }
        if e.slowing {
            b.say(Rule::FastThenSlow, Column::Mps, format!("fast early, slow later: throughput {} from the first to the last epoch ({}); adjust the batch and release the cache", e.throughput_change.map_or_else(|| "fell".into(), |c| format!("{:+.0} %", c * 100.0)), e.cite()));
            b.set(Column::Mps, Status::Risky);
        }
    }
    let leak_persists = f.leak_with_release.as_ref().filter(|e| e.leak);
    if let Some(e) = leak_persists {
        b.say(Rule::LeakPersists, Column::Remote, format!("the leak persists with release `{}` (+{:.0} % over {} epochs, {}): give it a dedicated remote host", e.release, e.growth * 100.0, e.epochs, e.cite()));
    }
    if let Some(s) = f
        .slow_layer
        .as_ref()
        .filter(|s| s.share >= t.slow_layer_share)
    {
        b.say(
            Rule::SlowLayer,
            Column::Mps,
            format!(
                "{} takes {} of the GPU time (run {}; threshold {}): a kernel gap; profile it",
                s.name,
                pct(s.share),
                s.run_id,
                pct(t.slow_layer_share)
            ),
        );
        b.set(Column::Mps, Status::Risky);
    }
    if let Some(fb) = &f.fallback {
        if fb.days >= f64::from(t.fallback_days) {
            b.say(Rule::Fallback, Column::Mps, format!("CPU-fallback operators ({}) in {} runs over {:.0} days (threshold {} days): split the architecture", fb.ops.join(", "), fb.runs, fb.days, t.fallback_days));
            b.set(Column::Mps, Status::Risky);
        }
    }
    if f.workload_kind == WorkloadKind::LlmInference {
        b.say(
            Rule::LlmInference,
            Column::Mlx,
            "LLM inference is the main job: MLX (and Ollama on MLX) first".into(),
        );
    }
    if f.cuda_parity_required {
        b.say(
            Rule::CudaParity,
            Column::Remote,
            "bitwise CUDA parity is required: train where CUDA is".into(),
        );
        b.set(Column::Mps, Status::Risky);
        b.set(Column::Mlx, Status::Risky);
    }
    leak_persists.is_some()
}

/// MLX against torch at the same batch: whether MLX won.
pub(crate) fn mlx_against_torch(f: &Facts, t: &DecideThresholds, b: &mut Board) -> bool {
    let mut mlx_wins = false;
    if let Some(m) = &f.mlx {
        let ratio = m.mlx_samples_per_s / m.torch_samples_per_s;
        let figures = format!(
            "{} at batch {}: MLX ({}) {} samples/s vs torch on {} {} samples/s ({}×, run {})",
            m.workload,
            m.batch,
            m.mlx_device,
            sig3(m.mlx_samples_per_s),
            m.torch_device,
            sig3(m.torch_samples_per_s),
            sig3(ratio),
            m.run_id
        );
        if ratio >= 1.0 + t.mlx_faster {
            mlx_wins = true;
            b.say(
                Rule::MlxFaster,
                Column::Mlx,
                format!("{figures}: MLX is at least {} faster", pct(t.mlx_faster)),
            );
        } else {
            b.say(
                Rule::Unmeasured,
                Column::Mlx,
                format!(
                    "{figures}: not {} faster, so torch stays",
                    pct(t.mlx_faster)
                ),
            );
        }
    }
    mlx_wins
}

/// Memory contention: every column on this machine becomes risky.
/// On battery (now, or when the sweep was timed), the sweep's most energy-efficient batch where
/// it saves a tenth or more of the energy per sample against the batch chosen for speed.
/// The measured numerics: the MPS column's standing numeric risk becomes a measured reason,
/// either way; a comparison on another device speaks to the CPU column (a dtype's policy there).
pub(crate) fn numerics(f: &Facts, b: &mut Board) {
    let Some(n) = &f.numerics else {
        return;
    };
    let column = if n.device.starts_with("mps") {
        Column::Mps
    } else {
        Column::Cpu
    };
    b.say(
        Rule::Numerics,
        column,
        format!(
            "{} (run {})",
            n.verdict.trim_start_matches("numerics: "),
            n.run_id
        ),
    );
    if !n.within && column == Column::Mps {
        b.set(Column::Mps, Status::Risky);
    }
}

pub(crate) fn energy(f: &Facts, b: &mut Board) {
    let swept = [(f.mps.as_ref(), Column::Mps), (f.cpu.as_ref(), Column::Cpu)];
    for (fact, column) in swept {
        let Some((s, e)) = fact.and_then(|s| Some((s, s.energy.as_ref()?))) else {
            continue;
        };
        if e.saves() && (f.on_battery || e.on_battery) {
            let lead = if f.on_battery && !e.on_battery {
                "on battery now: "
            } else {
                ""
            };
            b.say(
                Rule::Energy,
                column,
                format!(
                    "{lead}{} (sweep {}): where the charge matters more than the minutes, train at batch {}",
                    e.sentence(),
                    s.run_id,
                    e.efficient_batch
                ),
            );
            return;
        }
    }
}

pub(crate) fn contention(f: &Facts, b: &mut Board) {
    for c in &f.contention {
        b.say(
            Rule::Contention,
            Column::Remote,
            format!("memory contention: {c}"),
        );
        b.set(Column::Cpu, Status::Risky);
        b.set(Column::Mps, Status::Risky);
        b.set(Column::Mlx, Status::Risky);
    }
}

/// Batches in words, smallest first: `512, 1024`, or `301, 305, 312 and 5 more up to 24815`.
fn batch_list(batches: &[u32]) -> String {
    let mut b = batches.to_vec();
    b.sort_unstable();
    b.dedup();
    let head: Vec<String> = b.iter().take(3).map(u32::to_string).collect();
    match b.len() {
        0..=3 => head.join(", "),
        n => format!("{} and {} more up to {}", head.join(", "), n - 3, b[n - 1]),
    }
}

/// Why a pair's timing cannot be compared: the first of the two runs timed beside other work,
/// named with what disturbed it.
pub(crate) fn disturbance(a: &RunFact, b: &RunFact) -> Option<String> {
    [a, b].into_iter().find_map(|r| {
        r.disturbed
            .as_ref()
            .map(|d| format!("run {} was timed while {d}", r.run_id))
    })
}

/// How many more DataLoader workers fit in what RAM is left once the run itself is back at its
/// peak and a tenth of RAM stays free for the OS, each holding `worker` bytes as measured.
fn workers_that_fit(worker: u64, workers: u32, peak: u64, total: u64, available: u64) -> String {
    // Available now excludes nothing of the run (it is not running): its peak comes back.
    let left = available.saturating_sub(peak).saturating_sub(total / 10);
    let more = left / worker;
    if more == 0 {
        format!(
            "; but each of its {workers} workers holds about {} and only {} is available beside the run's {} peak (a tenth of RAM kept free): more workers would push this machine toward swap — make each lighter first (no copy of the dataset per worker, a smaller prefetch_factor)",
            format_bytes(worker),
            format_bytes(available),
            format_bytes(peak)
        )
    } else {
        format!(
            "; each worker holds about {}: up to {more} more fit in the {} available beside the run's {} peak (a tenth of RAM kept free), {} workers in all",
            format_bytes(worker),
            format_bytes(available),
            format_bytes(peak),
            u64::from(workers) + more
        )
    }
}
