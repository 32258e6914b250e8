//! The measured step loop for one batch size: warm-up until the step time settles, timed steps
//! with one device synchronise per step, and the data / forward / backward+optimizer split from
//! steps synchronised between phases; then the peaks of memory over the point.
//!
//! Time is spent where the figure needs it. Warm-up ends when two steps after the first agree
//! within 10 % (or after a second), and those two count as timed steps; the timed steps aim at a
//! quarter of a second in all. A step of 100 ms or more is its own split step (the two extra
//! synchronisations cost under 0.2 % of it), so a large batch costs one warm-up step and one
//! timed split step; a short one gets two extra split steps. Inputs are made once per point, on the device, unless
//! the request asks for host inputs copied every step.

use headroom_model::error::ErrorCode;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use headroom_model::protocol::{Event, Phase, Point, PointStatus, TimedUntil};
use headroom_model::{failure, stats};
use headroom_probe::sysmem;
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Tensor};

use crate::workloads::{InputKind, TargetKind, Workload};
use crate::{alloc, device, TorchError};

/// Bounds of one point's measurement.
#[derive(Debug, Clone, Copy)]
pub struct StepPolicy {
    /// Exactly this many timed steps, or `None` to choose from the warm-up step time.
    pub timed_steps: Option<u32>,
    pub min_warmup: u32,
    pub max_warmup: u32,
    /// Warm-up stops after this many seconds even if not settled.
    pub max_warmup_s: f64,
    /// Timed steps aim to last about this long in all.
    pub target_timed_s: f64,
    /// The first point of a worker warms up for at least this long: thread pools, page faults,
    /// the allocator and the device's clocks take a moment to settle in a new process.
    pub first_warmup_s: f64,
    pub min_timed: u32,
    pub max_timed: u32,
    /// Steps measured with synchronisation between phases.
    pub split_steps: u32,
    /// With the step count chosen here, timing goes on past `target_timed_s` until the
    /// throughput is known within [`headroom_model::stats::KNOWN_WITHIN`], for at most this many
    /// times the target.
    pub noisy_cap: f64,
}

impl Default for StepPolicy {
    fn default() -> Self {
        Self {
            timed_steps: None,
            min_warmup: 1,
            max_warmup: 30,
            max_warmup_s: 1.0,
            target_timed_s: 0.25,
            first_warmup_s: 0.5,
            min_timed: 1,
            max_timed: 200,
            split_steps: 2,
            noisy_cap: 4.0,
        }
    }
}

/// A step at least this long (seconds) is timed with the split synchronisations in place.
const SPLIT_INLINE_S: f64 = 0.1;

/// A workload with its optimizer, ready to measure batches on `device`.
pub struct Stepper {
    pub workload: Workload,
    pub device: Device,
    train: bool,
    opt: Option<nn::Optimizer>,
    /// Inputs made on the host and copied to the device every step (the data phase), instead of
    /// made once on the device.
    host_inputs: bool,
    /// A point has been measured in this process already (see `StepPolicy::first_warmup_s`).
    warmed: bool,
}

impl std::fmt::Debug for Stepper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stepper")
            .field("workload", &self.workload)
            .field("device", &self.device)
            .finish()
    }
}

struct Batch {
    x: Tensor,
    y: Option<Tensor>,
}

/// The start of a one-batch job (`epochs`, `profile`): the thread count, the device, the
/// workload built and probed for training, and the `hello` that says so.
pub fn start_training_job(
    device_spec: &str,
    workload: &str,
    input_shape: Option<&[i64]>,
    dtype: headroom_model::protocol::Dtype,
    threads: Option<u32>,
    emit: &mut dyn FnMut(Event),
) -> Result<(Stepper, Device), TorchError> {
    let dev = device::resolve(device_spec)?;
    crate::fit_threads(threads, dev, emit)?;
    let info = device::info(dev)?;
    let workload = crate::workloads::build(workload, input_shape, dtype, dev)?;
    let (name, shape, params) = (
        workload.name.clone(),
        workload.input_shape.clone(),
        crate::workloads::parameter_count(&workload.vs),
    );
    let mut stepper = Stepper::new(workload, dev, true)?;
    stepper.probe()?;
    emit(Event::Hello(crate::hello(
        &info,
        name,
        shape,
        params,
        info.available,
    )));
    Ok((stepper, dev))
}

impl Stepper {
    /// Prepares `workload` for training (AdamW, lr 1e-4) or inference.
    pub fn new(workload: Workload, device: Device, train: bool) -> Result<Self, TorchError> {
        let opt = if train {
            Some(nn::AdamW::default().build(&workload.vs, 1e-4)?)
        } else {
            None
        };
        Ok(Self {
            workload,
            device,
            train,
            opt,
            host_inputs: false,
            warmed: false,
        })
    }

    /// Makes steps copy their inputs from host memory every step (`true`), as a data loader
    /// without pinned memory would, instead of using inputs made once on the device.
    #[must_use]
    pub fn with_host_inputs(mut self, host_inputs: bool) -> Self {
        self.host_inputs = host_inputs;
        self
    }

    /// Where a point's inputs are made: the host when steps copy them, else the device.
    fn input_device(&self) -> Device {
        if self.host_inputs {
            Device::Cpu
        } else {
            self.device
        }
    }

    /// A batch of synthetic inputs (and targets) made on `dev`.
    fn make_batch(&self, batch: i64, dev: Device) -> Result<Batch, TorchError> {
        let w = &self.workload;
        let mut shape = vec![batch];
        shape.extend_from_slice(&w.input_shape);
        let x = match w.input {
            InputKind::Float => Tensor::f_randn(shape.as_slice(), (w.kind, dev))?,
            InputKind::Tokens { vocab } => {
                Tensor::f_randint(vocab, shape.as_slice(), (Kind::Int64, dev))?
            }
        };
        let y = match w.target {
            TargetKind::Class { classes } => {
                Some(Tensor::f_randint(classes, [batch], (Kind::Int64, dev))?)
            }
            TargetKind::TokenClass { vocab } => Some(Tensor::f_randint(
                vocab,
                shape.as_slice(),
                (Kind::Int64, dev),
            )?),
            TargetKind::None => None,
        };
        Ok(Batch { x, y })
    }

    fn loss(&self, out: &Tensor, y: Option<&Tensor>) -> Result<Tensor, TorchError> {
        let out = out.f_to_kind(Kind::Float)?;
        Ok(match (self.workload.target, y) {
            (TargetKind::Class { .. }, Some(y)) => out.f_log_softmax(-1, None)?.f_nll_loss(
                y,
                None::<Tensor>,
                tch::Reduction::Mean,
                -100,
            )?,
            (TargetKind::TokenClass { vocab }, Some(y)) => out
                .f_reshape([-1, vocab])?
                .f_log_softmax(-1, None)?
                .f_nll_loss(
                    &y.f_reshape([-1])?,
                    None::<Tensor>,
                    tch::Reduction::Mean,
                    -100,
                )?,
            _ => out.f_square()?.f_mean(None)?,
        })
    }

    /// One step on `b`; returns (data, forward, backward) seconds. Without `split`, only the sum
    /// is meaningful (one synchronise at the end).
    fn step(&mut self, b: &Batch, split: bool) -> Result<[f64; 3], TorchError> {
        let t0 = Instant::now();
        let x = b.x.f_to_device(self.device)?;
        let y =
            b.y.as_ref()
                .map(|y| y.f_to_device(self.device))
                .transpose()?;
        if split {
            device::synchronize(self.device)?;
        }
        let t1 = Instant::now();
        if self.train {
            if let Some(opt) = self.opt.as_mut() {
                opt.zero_grad();
            }
            let out = self.workload.model.forward(&x, true)?;
            let loss = self.loss(&out, y.as_ref())?;
            if split {
                device::synchronize(self.device)?;
            }
            let t2 = Instant::now();
            loss.f_backward()?;
            if let Some(opt) = self.opt.as_mut() {
                opt.step();
            }
            device::synchronize(self.device)?;
            let t3 = Instant::now();
            Ok([
                (t1 - t0).as_secs_f64(),
                (t2 - t1).as_secs_f64(),
                (t3 - t2).as_secs_f64(),
            ])
        } else {
            let _out = tch::no_grad(|| self.workload.model.forward(&x, false))?;
            device::synchronize(self.device)?;
            let t2 = Instant::now();
            Ok([(t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64(), 0.0])
        }
    }

    /// Runs `steps` training (or inference) steps at `batch` on one batch made once; returns the
    /// seconds they took (each step ends with a device synchronise).
    pub fn run_steps(&mut self, batch: u32, steps: u32) -> Result<f64, TorchError> {
        let b = self.make_batch(i64::from(batch), self.input_device())?;
        let t = Instant::now();
        for _ in 0..steps {
            self.step(&b, false)?;
        }
        Ok(t.elapsed().as_secs_f64())
    }

    /// A batch of synthetic inputs on the device, as a step would get it.
    pub fn device_input(&self, batch: u32) -> Result<Tensor, TorchError> {
        Ok(self.make_batch(i64::from(batch), self.device)?.x)
    }

    /// Checks that one sample goes through the model (forward only), so a bad shape or model is
    /// reported before any run is recorded.
    pub fn probe(&mut self) -> Result<(), TorchError> {
        let x = self.make_batch(1, self.device)?.x;
        let out = guarded(|| tch::no_grad(|| self.workload.model.forward(&x, false)))?;
        if let (TargetKind::Class { classes }, Some(&last)) =
            (self.workload.target, out.size().last())
        {
            if last != classes {
                return Err(TorchError::bad(
                    ErrorCode::BadShape,
                    format!("model output has {last} classes, expected {classes}"),
                ));
            }
        }
        Ok(())
    }

    /// Measures one point at `batch`, reporting progress through `emit`. Never panics: libtorch
    /// failures (OOM included) become a point with status `oom` or `error`.
    pub fn measure(
        &mut self,
        batch: u32,
        policy: &StepPolicy,
        emit: &mut dyn FnMut(Event),
    ) -> Point {
        let accel = device::accel_index(self.device);
        if let Some(i) = accel {
            let _ = alloc::empty_cache();
            let _ = alloc::reset_peak(i);
        }
        let peak_reset = sysmem::reset_process_peak();
        let result = guarded(|| self.measure_inner(batch, policy, emit));
        if let Some(opt) = self.opt.as_mut() {
            // Free gradients a failed step may have left behind.
            let _ = guarded(|| {
                opt.zero_grad();
                Ok(())
            });
        }
        let mut point = match result {
            Ok(p) => p,
            Err(e) => {
                let msg = e.to_string();
                Point::failed(batch, failure::classify(&msg), failure::headline(&msg))
            }
        };
        if let Some(i) = accel {
            if let Ok(s) = alloc::device_stats(i) {
                point.peak_allocated_bytes = Some(s.allocated_peak);
                point.peak_reserved_bytes = Some(s.reserved_peak);
            }
        }
        point.peak_process_bytes = sysmem::process_memory().map(|(_, peak)| peak);
        point.peak_bytes = if accel.is_some() {
            point.peak_reserved_bytes
        } else {
            point.peak_process_bytes
        };
        if point.status == PointStatus::Oom {
            // The figures of a failed point are not a peak of a finished step.
            point.peak_bytes = None;
            if accel.is_some() {
                let _ = alloc::empty_cache();
            }
        }
        if !peak_reset && accel.is_none() && point.status == PointStatus::Ok {
            emit(Event::Warning {
                message:
                    "process peak memory cannot be reset on this OS; CPU peaks are lifetime peaks"
                        .into(),
            });
        }
        point
    }

    fn measure_inner(
        &mut self,
        batch: u32,
        policy: &StepPolicy,
        emit: &mut dyn FnMut(Event),
    ) -> Result<Point, TorchError> {
        emit(Event::Progress {
            batch,
            phase: Phase::Setup,
            step: 0,
            of: 0,
        });
        let input = self.make_batch(i64::from(batch), self.input_device())?;
        let mut throttle = Throttle::default();
        let sum = |t: [f64; 3]| t.iter().sum::<f64>();

        // Warm-up until two steps in a row agree within 10 % (the first step, which allocates
        // and picks kernels, never counts), or for a second at most. Once a step (the first
        // included) takes 100 ms or more, the following ones are split steps (synchronised
        // between phases), so settled warm-up steps can count as timed ones.
        let mut warm: Vec<([f64; 3], bool)> = Vec::new();
        let mut splitting = false;
        let started = Instant::now();
        let (min_s, max_s) = if self.warmed {
            (0.0, policy.max_warmup_s)
        } else {
            self.warmed = true;
            (
                policy.first_warmup_s,
                policy.max_warmup_s.max(3.0 * policy.first_warmup_s),
            )
        };
        let mut settled = false;
        // Seconds in all steps of this point, and its first step alone.
        let mut stepped = 0.0;
        let mut first_step: Option<f64> = None;
        loop {
            let n = warm.len();
            if n >= policy.max_warmup as usize && started.elapsed().as_secs_f64() >= min_s {
                break;
            }
            let t = self.step(&input, splitting)?;
            stepped += sum(t);
            first_step.get_or_insert(sum(t));
            warm.push((t, splitting));
            let of = policy
                .max_warmup
                .max(u32::try_from(n + 1).unwrap_or(u32::MAX));
            throttle.emit(emit, batch, Phase::Warmup, n + 1, of);
            // Two steps after the first compare only when both were split or both plain.
            settled = n >= 2
                && warm[n - 1].1 == warm[n].1
                && stats::settled(&[sum(warm[n - 1].0), sum(t)], 2, 0.05);
            if sum(t) >= SPLIT_INLINE_S {
                splitting = true;
            }
            let elapsed = started.elapsed().as_secs_f64();
            let enough = warm.len() >= policy.min_warmup as usize && elapsed >= min_s;
            if enough && (settled || elapsed > max_s) {
                break;
            }
        }
        let last: Vec<f64> = warm[warm.len().saturating_sub(2)..]
            .iter()
            .map(|(t, _)| sum(*t))
            .collect();
        let typical = stats::percentile(&last, 50.0).unwrap_or(1.0).max(1e-6);
        let inline_split = typical >= SPLIT_INLINE_S;

        let n_timed = policy.timed_steps.unwrap_or_else(|| {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let n = (policy.target_timed_s / typical).ceil() as u32;
            n.clamp(policy.min_timed, policy.max_timed)
        });
        // The two settled warm-up steps are steady steps: they count as timed ones when they were
        // run as timed steps of this length are (split when long, plain when short); split steps
        // of a short step still give the split.
        let last_kind = warm.last().is_some_and(|(_, s)| *s);
        let moved = if settled && last_kind == inline_split {
            2.min(n_timed as usize).min(warm.len() - 1)
        } else {
            0
        };
        let tail = warm.split_off(warm.len() - moved);
        let mut parts: [Vec<f64>; 3] = Default::default();
        for (t, split) in &warm[1..] {
            if *split && !inline_split {
                add_split(&mut parts, *t);
            }
        }
        let mut times: Vec<f64> = Vec::with_capacity(n_timed as usize);
        for (t, split) in tail {
            if split {
                add_split(&mut parts, t);
            }
            times.push(sum(t));
        }
        let mut have_split = !parts[0].is_empty();

        // Timed steps; a long step carries the split itself, as the last timed step (unless a
        // settled warm-up step already did).
        // Noisy steps are timed longer, up to the cap, until the mean is known.
        let known = |times: &[f64]| {
            let total: f64 = times.iter().sum();
            policy.timed_steps.is_some()
                || total >= policy.target_timed_s * policy.noisy_cap
                || times.len() >= (policy.max_timed as usize) * 4
                || stats::cv(times)
                    .and_then(|cv| stats::ci_share(cv, times.len()))
                    .is_none_or(|ci| ci <= stats::KNOWN_WITHIN)
        };
        let hook = noise_hook(batch);
        while times.len() < n_timed as usize || (inline_split && !have_split) || !known(&times) {
            let i = times.len();
            let split = inline_split && !have_split && i + 1 >= n_timed as usize;
            let mut t = self.step(&input, split)?;
            if let Some(extra) = hook.filter(|h| i.is_multiple_of(h.0)).map(|h| h.1) {
                std::thread::sleep(extra);
                t[0] += extra.as_secs_f64();
            }
            stepped += sum(t);
            if split {
                add_split(&mut parts, t);
                have_split = true;
            }
            times.push(sum(t));
            throttle.emit(
                emit,
                batch,
                Phase::Timed,
                i + 1,
                n_timed.max(u32::try_from(times.len()).unwrap_or(u32::MAX)),
            );
        }
        let ci_known = stats::cv(&times)
            .and_then(|cv| stats::ci_share(cv, times.len()))
            .is_none_or(|ci| ci <= stats::KNOWN_WITHIN);
        let timed_until = if policy.timed_steps.is_some() {
            TimedUntil::Steps
        } else if !ci_known {
            TimedUntil::Cap
        } else if times.len() > n_timed as usize {
            TimedUntil::Known
        } else {
            TimedUntil::Target
        };
        let n_timed = u32::try_from(times.len()).unwrap_or(u32::MAX);

        // Short steps: split steps of their own, synchronised between phases (fewer when split
        // warm-up steps already gave some).
        let n_split = if have_split && inline_split {
            0
        } else {
            policy
                .split_steps
                .saturating_sub(u32::try_from(parts[0].len()).unwrap_or(u32::MAX))
        };
        for i in 0..n_split {
            let t = self.step(&input, true)?;
            stepped += sum(t);
            add_split(&mut parts, t);
            throttle.emit(emit, batch, Phase::Split, i as usize + 1, n_split);
        }

        let total: f64 = times.iter().sum();
        let ms: Vec<f64> = times.iter().map(|t| t * 1e3).collect();
        let mut p = Point::failed(batch, PointStatus::Ok, "");
        p.message = None;
        p.samples_per_s = (total > 0.0).then(|| f64::from(batch) * f64::from(n_timed) / total);
        p.step_ms_p50 = stats::percentile(&ms, 50.0);
        p.step_ms_p95 = stats::percentile(&ms, 95.0);
        p.step_cv = stats::cv(&ms);
        p.data_ms = stats::percentile(&parts[0], 50.0);
        p.forward_ms = stats::percentile(&parts[1], 50.0);
        p.backward_ms = stats::percentile(&parts[2], 50.0);
        p.warmup_steps = u32::try_from(warm.len()).unwrap_or(u32::MAX);
        p.timed_steps = n_timed;
        p.timed_s = Some(total);
        p.timed_until = Some(timed_until);
        p.steps_s = Some(stepped);
        p.first_step_s = first_step;
        let w = &self.workload;
        p.flops_per_sample = w.forward_flops.map(|f| {
            if self.train {
                f * (1.0 + w.backward_factor)
            } else {
                f
            }
        });
        Ok(p)
    }
}

/// A test hook: `HEADROOM_TEST_STEP_SLEEP=EVERY:MS` sleeps MS milliseconds in every EVERY-th
/// timed step (counted into its time), a stand-in for a machine that takes the cores away now
/// and then; `EVERY:MS@BATCH` does so only in the first measurement of batch BATCH (a point that
/// breaks the curve once).
fn noise_hook(batch: u32) -> Option<(usize, std::time::Duration)> {
    static MEASURED: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());
    let v = std::env::var("HEADROOM_TEST_STEP_SLEEP").ok()?;
    let (v, only) = match v.split_once('@') {
        Some((v, b)) => (v.to_owned(), Some(b.trim().parse::<u32>().ok()?)),
        None => (v, None),
    };
    if let Some(b) = only {
        let mut seen = MEASURED.lock().ok()?;
        if b != batch || seen.contains(&b) {
            return None;
        }
        seen.push(b);
    }
    let (every, ms) = v.split_once(':')?;
    let every: usize = every.trim().parse().ok().filter(|n| *n > 0)?;
    let ms: u64 = ms.trim().parse().ok()?;
    Some((every, std::time::Duration::from_millis(ms)))
}

/// Adds one split step's (data, forward, backward) seconds to `parts`, in ms.
fn add_split(parts: &mut [Vec<f64>; 3], t: [f64; 3]) {
    for (v, x) in parts.iter_mut().zip(t) {
        v.push(x * 1e3);
    }
}

thread_local! {
    /// How deep this thread is in [`guarded`] calls: a panic there becomes an error.
    static GUARDED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether a panic on this thread now is caught by [`guarded`].
pub fn in_guard() -> bool {
    GUARDED.with(std::cell::Cell::get) > 0
}

/// The message a panic carries.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "libtorch failed".to_owned())
}

/// Runs `f`, turning a panic inside tch (its infallible ops panic on libtorch errors) into an error.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, TorchError>) -> Result<T, TorchError> {
    GUARDED.with(|g| g.set(g.get() + 1));
    let caught = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(g.get().saturating_sub(1)));
    match caught {
        Ok(r) => r,
        Err(payload) => {
            let msg = panic_message(payload.as_ref());
            Err(TorchError::Torch(tch::TchError::Torch(msg)))
        }
    }
}

/// Emits progress at most every 100 ms (and always on the last step of a phase).
#[derive(Default)]
struct Throttle {
    last: Option<Instant>,
}

impl Throttle {
    fn emit(
        &mut self,
        emit: &mut dyn FnMut(Event),
        batch: u32,
        phase: Phase,
        step: usize,
        of: u32,
    ) {
        let step = u32::try_from(step).unwrap_or(u32::MAX);
        let due = self.last.is_none_or(|t| t.elapsed().as_millis() >= 100);
        if due || step == of {
            self.last = Some(Instant::now());
            emit(Event::Progress {
                batch,
                phase,
                step,
                of,
            });
        }
    }
}
