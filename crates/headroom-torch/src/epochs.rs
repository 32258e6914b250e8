//! `headroom epochs` in the worker: one batch size trained for several epochs; at each epoch end
//! the release policy runs and memory is read — live tensors and allocator cache on an
//! accelerator, the process footprint everywhere. `leak_mib` retains that much device memory per
//! epoch, a true leak for proving the detector.

use headroom_model::epochs::EpochSample;
use headroom_model::error::ErrorCode;
use headroom_model::protocol::{EpochsRequest, Event, Phase};
use headroom_probe::sysmem;
use tch::{Kind, Tensor};

use crate::measure::{guarded, start_training_job};
use crate::{alloc, device, TorchError};

/// Runs `req`, emitting `hello`, progress and one `epoch` event per epoch.
pub fn run_epochs(req: &EpochsRequest, emit: &mut dyn FnMut(Event)) -> Result<(), TorchError> {
    if let Err(e) = req.check() {
        return Err(TorchError::bad(ErrorCode::BadRequest, e.to_string()));
    }
    let (mut stepper, dev) = start_training_job(
        &req.device,
        &req.workload,
        req.input_shape.as_deref(),
        req.dtype,
        req.threads,
        emit,
    )?;
    let accel = device::accel_index(dev);
    let mut retained: Vec<Tensor> = Vec::new();
    for epoch in 1..=req.epochs {
        emit(Event::Progress {
            batch: req.batch,
            phase: Phase::Timed,
            step: epoch,
            of: req.epochs,
        });
        let seconds = guarded(|| stepper.run_steps(req.batch, req.steps_per_epoch))?;
        if req.leak_mib > 0 {
            // Filled, so every page is really touched (zeros may stay unmapped).
            let elems = i64::from(req.leak_mib) * (1 << 20) / 4;
            retained.push(guarded(|| {
                Ok(Tensor::f_ones([elems], (Kind::Float, dev))?)
            })?);
        }
        if req.release.empties_cache() {
            device::synchronize(dev)?;
            alloc::empty_cache()?;
        }
        let stats = accel.and_then(|i| alloc::device_stats(i).ok());
        let samples = f64::from(req.batch) * f64::from(req.steps_per_epoch);
        emit(Event::Epoch(EpochSample {
            epoch,
            live_bytes: stats.map(|s| s.allocated_current),
            cache_bytes: stats.map(|s| s.reserved_current.saturating_sub(s.allocated_current)),
            footprint_bytes: sysmem::process_memory().map(|(rss, _)| rss),
            seconds,
            samples_per_s: (seconds > 0.0).then(|| samples / seconds),
            cache_before_bytes: None,
        }));
    }
    Ok(())
}
