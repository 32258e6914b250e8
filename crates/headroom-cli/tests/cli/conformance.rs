//! Issue 38: Headroom's answers on training loops shaped the way public training code is
//! written — manual SGD over a sliced tensor, a GAN's two optimizers and three backward calls,
//! accumulation with a GradScaler that skips steps, a `get_batch` loop over a memory-mapped
//! file, an `IterableDataset`, a partial last batch, inference — each run under `headroom run`
//! with no code change and checked against the loop's own timer (`loops/own_timer.py`): its
//! iterations, its batch, samples/s within 5 %, its epochs, accumulation seen or absent — and
//! HF `Trainer`, Lightning's `Trainer` and an `accelerate` loop, installed from PyPI as test
//! dependencies (`tests/requirements.txt`), with tiny models built from configs — each also
//! validating after every epoch, as most training code does — and PyTorch Geometric's batches of
//! graphs, Keras 3 on its PyTorch backend and PyTorch Ignite.

use serde_json::Value;

use crate::common::{python, Home};
use Said::{Accumulation, Batch, Epochs, Inference};

/// The loops, written into the test's home (they import `own_timer` from beside them).
const LOOPS: &[(&str, &str)] = &[
    ("own_timer.py", include_str!("loops/own_timer.py")),
    ("manual_sgd_lm.py", include_str!("loops/manual_sgd_lm.py")),
    ("gan.py", include_str!("loops/gan.py")),
    (
        "accumulate_scaler.py",
        include_str!("loops/accumulate_scaler.py"),
    ),
    (
        "get_batch_memmap.py",
        include_str!("loops/get_batch_memmap.py"),
    ),
    ("iterable.py", include_str!("loops/iterable.py")),
    ("inference.py", include_str!("loops/inference.py")),
    ("lightning_loop.py", include_str!("loops/lightning_loop.py")),
    ("hf_trainer.py", include_str!("loops/hf_trainer.py")),
    (
        "accelerate_loop.py",
        include_str!("loops/accelerate_loop.py"),
    ),
    (
        "functional_grad.py",
        include_str!("loops/functional_grad.py"),
    ),
    ("no_signal.py", include_str!("loops/no_signal.py")),
    ("ddp_loop.py", include_str!("loops/ddp_loop.py")),
    (
        "module_transforms.py",
        include_str!("loops/module_transforms.py"),
    ),
    ("train_validate.py", include_str!("loops/train_validate.py")),
    ("zipped_loaders.py", include_str!("loops/zipped_loaders.py")),
    ("compiled.py", include_str!("loops/compiled.py")),
    ("distill.py", include_str!("loops/distill.py")),
    ("checkpointed.py", include_str!("loops/checkpointed.py")),
    ("hf_keywords.py", include_str!("loops/hf_keywords.py")),
    ("buckets.py", include_str!("loops/buckets.py")),
    ("ppo.py", include_str!("loops/ppo.py")),
    ("sb3_ppo.py", include_str!("loops/sb3_ppo.py")),
    ("generate.py", include_str!("loops/generate.py")),
    ("sample_own.py", include_str!("loops/sample_own.py")),
    (
        "lightning_predict.py",
        include_str!("loops/lightning_predict.py"),
    ),
    ("graphs.py", include_str!("loops/graphs.py")),
    ("keras_fit.py", include_str!("loops/keras_fit.py")),
    ("ignite_loop.py", include_str!("loops/ignite_loop.py")),
];

fn home_with_loops() -> Home {
    let home = Home::new();
    for (name, text) in LOOPS {
        std::fs::write(home.path().join(name), text).expect("write loop");
    }
    home
}

/// What the loop's own timer printed: (iterations, samples/s).
fn own(stderr: &str) -> (u64, f64) {
    // The loop's stdout and stderr pass through two pipes: a line may follow another's
    // unfinished one.
    let line = stderr
        .lines()
        .rev()
        .find_map(|l| l.find("own: ").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("the loop printed no own timer line: {stderr}"));
    // Another stream's text may also follow the figure on the same line ("17822.959`Trainer.fit`
    // stopped"): only the figure's own characters are read.
    let figure = |w: &str| -> String {
        w.chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect()
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    (
        words
            .get(2)
            .and_then(|w| figure(w).parse().ok())
            .unwrap_or_else(|| panic!("iterations in {line:?}")),
        words
            .get(4)
            .and_then(|w| figure(w).trim_end_matches('.').parse().ok())
            .unwrap_or_else(|| panic!("samples/s in {line:?}")),
    )
}

/// Runs `args` (a loop and its flags) under `headroom run --json`; its document and its own
/// timer's figures.
fn observed(home: &Home, args: &[&str]) -> (Value, u64, f64, String) {
    observed_with(home, args, &[])
}

/// [`observed`], with `env` set for the run.
fn observed_with(home: &Home, args: &[&str], env: &[(&str, &str)]) -> (Value, u64, f64, String) {
    let py = python();
    let all = [
        &["run", "--json", "--", py.to_str().expect("utf-8")][..],
        args,
    ]
    .concat();
    let mut cmd = home.cmd(&all);
    // One thread each: the tests run side by side on few cores.
    cmd.env("OMP_NUM_THREADS", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("headroom run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?} {env:?} failed: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let (iterations, rate) = own(&err);
    (v, iterations, rate, err)
}

/// Headroom's samples/s agrees with the loop's own within 5 %.
fn agrees(v: &Value, own_rate: f64) {
    let mine = v["samples_per_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("no samples/s: {v}"));
    let off = (mine - own_rate).abs() / own_rate;
    assert!(
        off <= 0.05,
        "samples/s {mine:.1} against the loop's own {own_rate:.1}: {:.1} % off",
        off * 100.0
    );
}

/// One thing a loop's run must say, beyond its iterations and samples/s (which it always must).
#[derive(Debug)]
enum Said {
    /// The batch.
    Batch(u64),
    /// Backward calls over successive batches per optimizer step.
    Accumulation(u64),
    /// An inference loop, or not.
    Inference(bool),
    /// How many epochs.
    Epochs(usize),
}

/// The run `v` of a loop whose own timer counted `iterations` at `rate` samples/s: Headroom's
/// iterations are the loop's, its samples/s agrees within 5 %, and it says each of `said`.
/// `label` names the loop in a failure's message.
fn conforms(label: &str, v: &Value, iterations: u64, rate: f64, said: &[Said]) {
    let o = &v["observed"];
    assert_eq!(v["steps"].as_u64(), Some(iterations), "{label}: {o}");
    for s in said {
        let (seen, wanted) = match s {
            Said::Batch(b) => (v["batch"].clone(), Value::from(*b)),
            Said::Accumulation(a) => (o["accumulation"].clone(), Value::from(*a)),
            Said::Inference(i) => (o["inference"].clone(), Value::from(*i)),
            Said::Epochs(n) => (
                Value::from(v["epochs"].as_array().map(Vec::len)),
                Value::from(*n),
            ),
        };
        assert_eq!(seen, wanted, "{label}: {s:?} wanted: {v}");
    }
    agrees(v, rate);
}

/// The same sequence-first language model given its batch under a flag Headroom does not read:
/// the batch is the one its LSTM or its transformer layer (`batch_first=False`) was given, not
/// the sequence length its input leads with.
#[test]
fn a_sequence_first_language_model_is_read_at_its_batch_without_being_told() {
    let home = home_with_loops();
    for arch in ["lstm", "transformer"] {
        let (v, iterations, rate, _) = observed(
            &home,
            &[
                "manual_sgd_lm.py",
                "--sequences",
                "12",
                "--arch",
                arch,
                "--epochs",
                "1",
                "--tokens",
                "60000",
            ],
        );
        // The batch, not the bptt of 35.
        conforms(arch, &v, iterations, rate, &[Batch(12)]);
    }
}

/// The classic language model ending each epoch with `evaluate()` over a held-out tensor (no
/// DataLoader: the model in eval mode under `no_grad`): that evaluation is no training time —
/// samples/s agrees with the script's timer, which leaves it out as its ms/batch does — while
/// its epochs, as the script times them, keep it.
#[test]
fn the_classic_language_models_evaluation_each_epoch_is_no_training_time() {
    let home = home_with_loops();
    let (v, iterations, rate, err) = observed(
        &home,
        &["manual_sgd_lm.py", "--validate", "--tokens", "80000"],
    );
    conforms("lm", &v, iterations, rate, &[Batch(20), Inference(false)]);
    let ends = err
        .lines()
        .filter(|l| l.starts_with("| end of epoch"))
        .count();
    assert_eq!(ends, 3, "{err}");
    assert_eq!(v["epochs"].as_array().map(Vec::len), Some(3), "{v}");
}

/// nanoGPT's `estimate_loss()` every 20 iterations (the first before any training): batches
/// from `get_batch`, the model in eval mode under `no_grad`. No training time, no accumulation
/// read from its batches; the loop's 3 micro-batches per step stay what they are.
#[test]
fn nanogpts_estimate_loss_is_no_training_time() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(
        &home,
        &[
            "get_batch_memmap.py",
            "--eval_interval",
            "20",
            "--eval_iters",
            "60",
            "--max_iters",
            "120",
        ],
    );
    let said = [Batch(8), Accumulation(3), Inference(false)];
    conforms("nanogpt", &v, iterations, rate, &said);
}

#[test]
fn manual_sgd_over_a_sliced_tensor_is_iterations_its_batch_and_its_epochs_from_progress_lines() {
    let home = home_with_loops();
    let (v, iterations, rate, err) = observed(&home, &["manual_sgd_lm.py", "--batch-size", "20"]);
    let o = &v["observed"];
    assert_eq!(o["optimizer_steps"], 0, "no torch.optim: {o}");
    assert_eq!(o["backward_calls"], 1, "{o}");
    // Headroom read the batch from the command line: that is the batch, not the sequence
    // dimension the tensors lead with.
    let said = [Batch(20), Accumulation(1), Inference(false)];
    conforms("lm", &v, iterations, rate, &said);
    // Three epochs from "| epoch N | i/n batches" and "| end of epoch N | time: …" lines, each
    // as long as the script's own timer says (within 5 % or 50 ms).
    let own_epochs: Vec<f64> = err
        .lines()
        .filter(|l| l.starts_with("| end of epoch"))
        .filter_map(|l| {
            l.split("time:")
                .nth(1)?
                .trim()
                .split('s')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(own_epochs.len(), 3, "{err}");
    epochs_agree(&v, &own_epochs);
}

#[test]
fn a_gan_is_one_iteration_per_generator_step_at_its_real_batch_with_no_accumulation() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["gan.py"]);
    let o = &v["observed"];
    assert_eq!(o["optimizer_steps"], 2, "{o}");
    assert_eq!(o["backward_calls"], 3, "{o}");
    // Three backward calls over one batch are no accumulation; 128 a batch, the partial last
    // one (104) decides nothing.
    let said = [Batch(128), Accumulation(1), Epochs(3)];
    conforms("gan", &v, iterations, rate, &said);
}

#[test]
fn accumulation_with_a_grad_scaler_counts_the_steps_it_skipped() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["accumulate_scaler.py"]);
    let o = &v["observed"];
    assert!(o["skipped_steps"].as_u64().is_some_and(|n| n >= 1), "{o}");
    let said = [Batch(16), Accumulation(4), Epochs(2)];
    conforms("scaler", &v, iterations, rate, &said);
}

#[test]
fn a_get_batch_loop_over_a_memory_mapped_file_has_its_batch_and_accumulation() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["get_batch_memmap.py"]);
    conforms(
        "get_batch",
        &v,
        iterations,
        rate,
        &[Batch(8), Accumulation(3)],
    );
}

#[test]
fn an_iterable_dataset_gives_iterations_and_epochs() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["iterable.py"]);
    let said = [Batch(24), Accumulation(1), Epochs(3)];
    conforms("iterable", &v, iterations, rate, &said);
}

#[test]
fn an_inference_loop_is_timed_as_inference() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["inference.py"]);
    conforms(
        "inference",
        &v,
        iterations,
        rate,
        &[Batch(64), Inference(true)],
    );
}

/// Distillation: a frozen teacher in eval mode, called under `no_grad` on each batch before the
/// student, is neither the model trained nor an evaluation of it (it was taken for both: its
/// calls' time was left out as evaluation, samples/s +146 %); nor is a momentum teacher.
#[test]
fn a_distilled_student_is_the_model_trained_and_its_teacher_no_evaluation() {
    let home = home_with_loops();
    for args in [&["distill.py"][..], &["distill.py", "--ema"]] {
        let (v, iterations, rate, _) = observed(&home, args);
        let said = [Batch(64), Accumulation(1), Inference(false), Epochs(3)];
        conforms(&format!("{args:?}"), &v, iterations, rate, &said);
    }
}

/// Activation checkpointing runs each block's forward again inside the backward pass, and the
/// reentrant kind calls a backward per block from inside it: still one backward and one
/// iteration a step — with an optimizer or with weights updated by hand (where each inner
/// backward was taken for an iteration: 600 for 120, samples/s ×5).
#[test]
fn activation_checkpointing_is_one_backward_and_one_iteration_a_step() {
    let home = home_with_loops();
    for args in [
        &["checkpointed.py", "--steps", "60", "--reentrant"][..],
        &[
            "checkpointed.py",
            "--steps",
            "60",
            "--reentrant",
            "--manual",
        ],
        &["checkpointed.py", "--steps", "60", "--manual"],
    ] {
        let (v, iterations, rate, _) = observed(&home, args);
        let o = &v["observed"];
        assert_eq!(o["checkpointing"], true, "{args:?} {o}");
        assert_eq!(o["backward_calls"], 1, "{args:?} {o}");
        let said = [Batch(32), Accumulation(1)];
        conforms(&format!("{args:?}"), &v, iterations, rate, &said);
    }
}

/// A hand-written loop over a transformers model that passes its inputs by keyword
/// (`model(input_ids=…, labels=…)`, `model(**batch)`) and slices them from a tensor: its batch,
/// its accumulation and its inference are read from the keywords (they were not: no batch and
/// no samples/s, or accumulation 1 with samples/s 12 % low over its first iterations).
#[test]
fn a_transformers_model_given_its_inputs_by_keyword_has_its_batch_and_accumulation() {
    let home = home_with_loops();
    for (args, accumulation) in [
        (&["hf_keywords.py", "--max_steps", "40"][..], 1),
        (
            &[
                "hf_keywords.py",
                "--dict",
                "--gradient_accumulation_steps",
                "3",
                "--max_steps",
                "15",
            ],
            3,
        ),
    ] {
        let (v, iterations, rate, _) = observed(&home, args);
        let said = [Batch(8), Accumulation(accumulation)];
        conforms(&format!("{args:?}"), &v, iterations, rate, &said);
    }
    let (v, iterations, rate, _) =
        observed(&home, &["hf_keywords.py", "--infer", "--max_steps", "60"]);
    conforms("infer", &v, iterations, rate, &[Batch(8), Inference(true)]);
}

/// Length-bucketed batches under a token budget (a `batch_sampler`): every batch a different
/// size. Samples/s counts each iteration at its own batch (it counted every one at the
/// commonest, 28 % low here).
#[test]
fn batches_of_varying_size_count_each_at_its_own_size() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["buckets.py"]);
    conforms(
        "buckets",
        &v,
        iterations,
        rate,
        &[Accumulation(1), Epochs(2)],
    );
}

/// PPO as the two most-used codebases write it: rollouts under `no_grad` (CleanRL's agent in
/// train mode through its own methods; Stable-Baselines3's policy switched to eval mode and
/// called itself), then epochs of minibatch updates (SB3's through the policy's sub-networks,
/// not its forward). An iteration is an update at the minibatch, and the rollouts are part of
/// the training's time, as both loops' own meters count them. (SB3's shape read batch 4 — the
/// environments — and samples/s −89 %: its modules were settled over the rollouts' inference,
/// never seeing the updates, and the rollouts were taken for evaluation.)
#[test]
fn ppo_rollouts_and_minibatch_updates_are_iterations_at_the_minibatch() {
    let home = home_with_loops();
    for (args, batch) in [(&["ppo.py"][..], 128), (&["sb3_ppo.py"][..], 64)] {
        let (v, iterations, rate, _) = observed(&home, args);
        let said = [Batch(batch), Accumulation(1), Inference(false)];
        conforms(&format!("{args:?}"), &v, iterations, rate, &said);
    }
}

/// Batched generation with transformers: one `generate()` call per batch of prompts runs the
/// model once per new token; the loop's iteration is the call, at its batch of sequences (each
/// token's forward was taken for one: 192 iterations for 12, samples/s 16× the loop's).
/// The same with a model's own `generate()` method (nanoGPT's `sample.py`: the model calls
/// itself once per token from a method of its own, decorated with `torch.no_grad()`): 288
/// iterations for 12 before.
#[test]
fn a_generate_call_is_one_inference_iteration() {
    let home = home_with_loops();
    for (script, batch) in [("generate.py", 8), ("sample_own.py", 4)] {
        let (v, iterations, rate, _) = observed(&home, &[script]);
        conforms(
            script,
            &v,
            iterations,
            rate,
            &[Batch(batch), Inference(true)],
        );
    }
}

/// Lightning's `predict()`: inference over a DataLoader that Lightning stops at its length, so
/// no batch is asked after the last — its iteration ends with its forward pass (it was never
/// counted: 199 of 200).
#[test]
fn a_lightning_predict_is_an_inference_iteration_per_batch_the_last_one_too() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["lightning_predict.py"]);
    conforms(
        "predict",
        &v,
        iterations,
        rate,
        &[Batch(64), Inference(true)],
    );
}

/// Each epoch's seconds as Headroom timed it agree with the loop's own (5 % or 50 ms).
fn epochs_agree(v: &Value, own_epochs: &[f64]) {
    let epochs = v["epochs"].as_array().expect("epochs");
    assert_eq!(epochs.len(), own_epochs.len(), "{v}");
    for (e, mine) in epochs.iter().zip(own_epochs) {
        let s = e["seconds"].as_f64().expect("seconds");
        assert!(
            (s - mine).abs() <= (0.05 * mine).max(0.05),
            "epoch {} took {s:.3} s by Headroom, {mine:.3} s by the loop",
            e["epoch"]
        );
    }
}

#[test]
fn lightning_with_max_epochs_3_is_three_epochs_timed_from_their_first_batch() {
    let home = home_with_loops();
    let (v, iterations, rate, err) = observed(&home, &["lightning_loop.py"]);
    conforms(
        "lightning",
        &v,
        iterations,
        rate,
        &[Batch(32), Accumulation(1)],
    );
    // Lightning stops each pass at the loader's length without exhausting it: still 3 epochs,
    // the first timed from its first batch, not from the interpreter's start.
    let own_epochs = own_epoch_figures(&err);
    assert_eq!(own_epochs.len(), 3, "{err}");
    epochs_agree(&v, &own_epochs);
}

/// The classic ImageNet script's shape (DataLoader workers, a partial last batch): each epoch
/// trains over one loader, then validates over another under `no_grad`. Its validation passes
/// are no epochs, their batch is not the batch, and their time (their workers' start included)
/// is no training time: samples/s agrees with the script's meter, which runs only while it
/// trains.
#[test]
fn a_validation_pass_after_each_epoch_is_neither_an_epoch_nor_training_time() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["train_validate.py", "--workers", "2"]);
    let said = [Batch(32), Accumulation(1), Inference(false), Epochs(3)];
    conforms("train_validate", &v, iterations, rate, &said);
}

/// A validation every 10 iterations inside each epoch (as step-based evaluation schedules
/// do): each epoch's samples/s is its samples over its time less those validations, as the
/// loop's own per-epoch figure (within 15 %: it counted them as training time, a third of the
/// rate).
#[test]
fn validations_inside_an_epoch_are_no_part_of_its_samples_per_second() {
    let home = home_with_loops();
    let (v, iterations, rate, err) = observed(&home, &["train_validate.py", "--val-every", "10"]);
    conforms("val-every", &v, iterations, rate, &[Epochs(3)]);
    epochs_rates_agree(&v, &err);
}

/// Batches through a prefetcher that draws the next batch before the current one trains (apex's
/// ImageNet example, timm's `PrefetchLoader`): the pass runs out before its last batch has
/// trained. Each epoch still ends with its last iteration, not where the next pass begins —
/// after the validation between them (each epoch's samples/s was about half the loop's).
#[test]
fn a_prefetcher_ahead_of_the_loop_ends_each_epoch_at_its_last_iteration() {
    let home = home_with_loops();
    let (v, iterations, rate, err) = observed(&home, &["train_validate.py", "--prefetcher"]);
    let said = [Batch(32), Accumulation(1), Inference(false), Epochs(3)];
    conforms("prefetcher", &v, iterations, rate, &said);
    epochs_rates_agree(&v, &err);
}

/// The figure of each "own epoch N <what> <figure>" line a loop printed (its epoch's seconds or
/// samples/s), in order.
fn own_epoch_figures(err: &str) -> Vec<f64> {
    err.lines()
        // The number alone: another pipe's line may follow it on the same line.
        .filter_map(|l| {
            let t = l[l.find("own epoch ")?..].split(' ').nth(4)?;
            let n: String = t
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            n.parse().ok()
        })
        .collect()
}

/// Each epoch's samples/s as Headroom read it agrees with the loop's own "own epoch N
/// samples/s R" line. An epoch here is ~0.2 s: a few ms of the machine's load between the
/// loop's clock and Headroom's move it by several percent, so within 15 %; the faults this
/// guards against are 2–3× off.
fn epochs_rates_agree(v: &Value, err: &str) {
    let own_epochs = own_epoch_figures(err);
    let epochs = v["epochs"].as_array().expect("epochs");
    assert_eq!(own_epochs.len(), epochs.len(), "{err}");
    for (e, own) in epochs.iter().zip(&own_epochs) {
        let mine = e["samples_per_s"].as_f64().expect("an epoch's samples/s");
        assert!(
            (mine - own).abs() <= 0.15 * own,
            "epoch {}: {mine:.0} samples/s by Headroom, {own:.0} by the loop",
            e["epoch"]
        );
    }
}

/// Each epoch breaks out of its pass after 20 of its 32 iterations (validating after it): every
/// epoch is counted, the last one too — it ended with its last iteration, not with the program.
#[test]
fn a_loop_that_breaks_after_so_many_steps_each_epoch_has_all_its_epochs() {
    let home = home_with_loops();
    let (v, iterations, rate, _) =
        observed(&home, &["train_validate.py", "--steps-per-epoch", "20"]);
    assert_eq!(iterations, 60);
    conforms("steps-per-epoch", &v, iterations, rate, &[Epochs(3)]);
    let seconds: Vec<f64> = v["epochs"]
        .as_array()
        .expect("epochs")
        .iter()
        .map(|e| e["seconds"].as_f64().expect("seconds"))
        .collect();
    // The last epoch is found over only at the program's end, after its validation (which
    // takes about twice an epoch here): it is timed to its last iteration all the same.
    assert!(
        seconds[2] <= 1.5 * seconds[0].max(seconds[1]) + 0.02,
        "the last epoch took {seconds:?}"
    );
}

/// A model called through `torch.compile`: observed as any other, and the program's output
/// has no warning of Headroom's making (torch warns at a compiled module's call while global
/// module hooks are set, as the observer's are over the first iterations).
#[test]
fn a_compiled_model_is_observed_without_a_warning_of_headrooms_making() {
    let home = home_with_loops();
    let (v, iterations, rate, err) = observed(&home, &["compiled.py"]);
    assert_eq!(v["observed"]["compiled"], true, "{v}");
    conforms("compiled", &v, iterations, rate, &[Batch(64), Epochs(3)]);
    assert!(!err.contains("global hooks"), "{err}");
}

/// A fault in the observer's own bookkeeping — wherever it happens: at a batch given, a pass
/// begun, a module's call, an optimizer's step, an iteration's end — never reaches the program:
/// it trains to its end and exits as it would alone, and the run says the observer failed and
/// where.
#[test]
fn a_fault_in_the_observer_costs_the_program_nothing() {
    let home = home_with_loops();
    let py = python();
    for fault in [
        "batch_given",
        "pass_begins",
        "global_pre",
        "after_step",
        "close",
        "pass_ended",
    ] {
        let (v, iterations, _, err) = observed_with(
            &home,
            &["train_validate.py"],
            &[("HEADROOM_OBSERVER_FAULT", fault)],
        );
        assert_eq!(
            iterations, 96,
            "{fault}: the loop did not train to its end: {err}"
        );
        let said = v["observed"]["probe_error"].as_str().unwrap_or_default();
        assert!(
            said.starts_with(&format!(
                "{fault}: RuntimeError('a fault injected into {fault}')"
            )),
            "{fault}: {v}"
        );
        assert!(!err.contains("Traceback"), "{fault}: {err}");
    }
    // In words: how far it saw, and that the program ran on.
    let out = home
        .cmd(&[
            "run",
            "--",
            py.to_str().expect("utf-8"),
            "train_validate.py",
        ])
        .env("OMP_NUM_THREADS", "1")
        .env("HEADROOM_OBSERVER_FAULT", "close")
        .output()
        .expect("headroom run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "headroom: 0 training iterations seen before Headroom's observer stopped at a fault \
             of its own (close: RuntimeError('a fault injected into close')); the program ran \
             on, unobserved from there"
        ),
        "{err}"
    );
}

/// Two loaders zipped per iteration (a labelled batch of 32, an unlabelled one of 64 from a
/// longer loader that zip leaves before its end): the batch is the first loader's, and each
/// epoch is counted once, where the shorter pass ends — not again when the longer one is asked
/// anew.
#[test]
fn zipped_loaders_are_one_epoch_per_pass_at_the_first_loaders_batch() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["zipped_loaders.py"]);
    let said = [Batch(32), Accumulation(1), Epochs(3)];
    conforms("zipped", &v, iterations, rate, &said);
}

/// Lightning with a validation loader: its sanity check before training and its validation
/// after each epoch (under `inference_mode`, stopped at the loader's length) are neither
/// epochs nor training time.
#[test]
fn lightning_validating_each_epoch_is_three_epochs_at_its_training_speed() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["lightning_loop.py", "--validate"]);
    conforms("lightning", &v, iterations, rate, &[Batch(32), Epochs(3)]);
}

/// An HF `Trainer` evaluating after each epoch: its evaluation batches are drawn with grad
/// enabled (only the forward runs under `no_grad`); the pass trains nothing, so it is still no
/// epoch and no training time. (The Trainer's own `train_samples_per_second` counts its
/// evaluations in; the loop's timer, paused around `evaluate`, does not.)
#[test]
fn an_hf_trainer_evaluating_each_epoch_is_timed_without_its_evaluations() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["hf_trainer.py", "--validate"]);
    let said = [Batch(16), Accumulation(2), Epochs(2)];
    conforms("trainer", &v, iterations, rate, &said);
}

#[test]
fn an_hf_trainer_with_accumulation_agrees_with_its_own_samples_per_second() {
    let home = home_with_loops();
    let (v, iterations, rate, err) = observed(&home, &["hf_trainer.py"]);
    let said = [Batch(16), Accumulation(2), Epochs(2)];
    conforms("trainer", &v, iterations, rate, &said);
    // The Trainer's own figure (its whole training loop) too.
    let trainer: f64 = err
        .lines()
        .find_map(|l| {
            l.strip_prefix("trainer: train_samples_per_second ")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no Trainer figure: {err}"));
    agrees(&v, trainer);
}

#[test]
fn an_accelerate_loop_with_accumulate_steps_every_second_batch() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["accelerate_loop.py"]);
    let said = [Batch(32), Accumulation(2), Epochs(2)];
    conforms("accelerate", &v, iterations, rate, &said);
}

/// `run --sweep batch=auto` of a loop (its batch flag given `{batch}`), up to `max` on the
/// CPU: every start gives a point (no error, no invented OOM), and the answer is a knee or
/// throughput still rising at the largest batch allowed.
fn swept(script: &str, flag: &str, max: &str) -> Value {
    swept_as(&[script], flag, max)
}

/// [`swept`] of a command that starts with `lead` after the Python (a launcher and its
/// options, then the script).
fn swept_as(lead: &[&str], flag: &str, max: &str) -> Value {
    let script = lead.last().copied().unwrap_or_default();
    let home = home_with_loops();
    let py = python();
    let all = [
        &[
            "run",
            "--json",
            "--sweep",
            "batch=auto",
            "--max-batch",
            max,
            "--",
            py.to_str().expect("utf-8"),
        ][..],
        lead,
        &[flag, "{batch}"],
    ]
    .concat();
    let out = home
        .cmd(&all)
        .env("OMP_NUM_THREADS", "1")
        .output()
        .expect("headroom run --sweep");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let points = v["sweep"]["points"].as_array().expect("points").clone();
    assert!(points.len() >= 3, "{points:#?}");
    for p in &points {
        assert_eq!(p["status"], "ok", "{script}: {p}");
        assert!(p["samples_per_s"].as_f64().is_some_and(|s| s > 0.0), "{p}");
        // The machine's state while the start was measured, read at both ends of it.
        assert!(
            p["conditions"]["samples"].as_u64().unwrap_or(0) >= 2,
            "{script}: {p}"
        );
    }
    let s = &v["sweep"]["summary"];
    assert!(
        s["knee_batch"].as_u64().is_some() || s["still_rising"] == true,
        "{script}: {s}"
    );
    assert!(s["recommended_batch"].as_u64().is_some(), "{s}");
    v
}

/// PyTorch Geometric's graph classification: its DataLoader gives a `Batch` of whole graphs, whose
/// tensors stack every graph's nodes. The batch is the graphs (it was unknown: no batch, no
/// samples/s; read from the model's input it would be the nodes, ~24× too many).
#[test]
fn a_batch_of_graphs_is_its_graphs_not_their_nodes() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["graphs.py"]);
    let said = [Batch(32), Accumulation(1), Inference(false), Epochs(3)];
    conforms("graphs", &v, iterations, rate, &said);
}

/// Keras 3 on its PyTorch backend: `fit` over NumPy arrays (its own DataLoader, its own
/// optimizer, validating after each epoch) and `predict`, whose model Keras first builds by
/// calling its layers on a symbolic tensor — no iteration (it was one: 64 for 63, samples/s
/// 11 % low, the first real batch's set-up timed in).
#[test]
fn keras_on_torch_fits_and_predicts_at_its_batch() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["keras_fit.py", "--validate"]);
    let said = [Batch(32), Accumulation(1), Inference(false), Epochs(3)];
    conforms("fit", &v, iterations, rate, &said);
    let (v, iterations, rate, _) =
        observed(&home, &["keras_fit.py", "--predict", "--batch-size", "64"]);
    conforms(
        "predict",
        &v,
        iterations,
        rate,
        &[Batch(64), Inference(true)],
    );
}

/// PyTorch Ignite's supervised trainer (the loop MONAI's trainers run): its Engine drives the
/// DataLoader, an evaluator validates after each epoch. Iterations, batch, samples/s and each
/// epoch's time as the Engine's own events give them.
#[test]
fn an_ignite_engine_is_observed_as_its_own_events_count_it() {
    let home = home_with_loops();
    let (v, iterations, rate, err) = observed(&home, &["ignite_loop.py"]);
    let said = [Batch(32), Accumulation(1), Inference(false), Epochs(3)];
    conforms("ignite", &v, iterations, rate, &said);
    epochs_agree(&v, &own_epoch_figures(&err));
}

#[test]
fn batch_auto_sweeps_a_manual_sgd_language_model() {
    swept("manual_sgd_lm.py", "--batch-size", "256");
}

#[test]
fn batch_auto_sweeps_a_distillation() {
    swept("distill.py", "--batch-size", "512");
}

#[test]
fn batch_auto_sweeps_a_gan_by_its_batch_flag() {
    swept("gan.py", "--batchSize", "512");
}

#[test]
fn batch_auto_sweeps_a_graph_network() {
    swept("graphs.py", "--batch-size", "512");
}

#[test]
fn batch_auto_sweeps_a_keras_fit() {
    swept("keras_fit.py", "--batch-size", "512");
}

#[test]
fn batch_auto_sweeps_an_inference_loop() {
    swept("inference.py", "--batch-size", "1024");
}

#[test]
fn batch_auto_sweeps_accumulation_with_a_grad_scaler() {
    swept("accumulate_scaler.py", "--batch-size", "256");
}

#[test]
fn batch_auto_sweeps_a_get_batch_loop() {
    swept("get_batch_memmap.py", "--batch_size", "128");
}

#[test]
fn batch_auto_sweeps_an_iterable_dataset() {
    swept("iterable.py", "--batch-size", "512");
}

#[test]
fn batch_auto_sweeps_an_hf_trainer() {
    swept("hf_trainer.py", "--batch-size", "128");
}

#[test]
fn batch_auto_sweeps_a_lightning_trainer() {
    swept("lightning_loop.py", "--batch-size", "512");
}

#[test]
fn batch_auto_sweeps_an_accelerate_loop() {
    swept("accelerate_loop.py", "--batch-size", "512");
}

#[test]
fn batch_auto_sweeps_two_torchrun_ranks() {
    swept_as(
        &[
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "ddp_loop.py",
        ],
        "--batch-size",
        "512",
    );
}

/// `torchrun` with two ranks: the run follows one rank (its own half of each step), and that
/// rank's samples/s agrees with the rank's own timer.
#[test]
fn two_torchrun_ranks_agree_with_the_ranks_own_timer() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(
        &home,
        &[
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "ddp_loop.py",
        ],
    );
    assert_eq!(v["observed"]["stepping_processes"], 2, "{v}");
    let said = [Batch(32), Accumulation(1), Epochs(2)];
    conforms("torchrun", &v, iterations, rate, &said);
}

#[test]
fn a_functional_loop_with_autograd_grad_and_no_optimizer_is_iterations() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["functional_grad.py"]);
    assert_eq!(v["observed"]["optimizer_steps"], 0, "{v}");
    conforms("functional", &v, iterations, rate, &[Batch(32), Epochs(2)]);
}

/// A loop that gives no iteration Headroom can see is said so plainly, and `batch=auto` stops
/// its start within its bound (shortened here) instead of running the whole script.
#[test]
fn a_loop_without_any_iteration_signal_is_refused_within_seconds_with_the_reason() {
    let home = home_with_loops();
    let py = python();
    let started = std::time::Instant::now();
    let out = home
        .cmd(&[
            "run",
            "--json",
            "--sweep",
            "batch=auto",
            "--",
            py.to_str().expect("utf-8"),
            "no_signal.py",
            "--batch-size",
            "{batch}",
        ])
        .env("HEADROOM_NO_ITERATION_S", "3")
        .env("OMP_NUM_THREADS", "1")
        .output()
        .expect("headroom run --sweep");
    let took = started.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(took < 60.0, "took {took:.0} s: {err}");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {err}"));
    let points = v["sweep"]["points"].as_array().cloned().unwrap_or_default();
    assert!(!points.is_empty(), "{v}");
    let message = points[0]["message"].as_str().unwrap_or_default();
    assert_eq!(points[0]["status"], "error", "{}", points[0]);
    assert!(
        message.contains("no iteration seen") || message.contains("no training iteration seen"),
        "{message}"
    );
    assert!(err.contains("no training iteration seen"), "{err}");
}

#[test]
fn transforms_that_are_modules_in_dataloader_workers_are_not_the_loop() {
    let home = home_with_loops();
    let (v, iterations, rate, _) = observed(&home, &["module_transforms.py"]);
    let said = [Batch(64), Inference(false), Epochs(2)];
    conforms("transforms", &v, iterations, rate, &said);
}
