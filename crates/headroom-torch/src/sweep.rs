//! One sweep, start to end: resolve the device and the budget, build the workload, check it with
//! one sample, then let the planner pick batches and measure them, emitting protocol events.

use headroom_model::budget::format_bytes;
use headroom_model::planner::{Next, Planner};
use headroom_model::protocol::{
    upsert_point, BatchPlan, Event, Mode, Point, PointStatus, SweepRequest,
};
use headroom_model::summary::{shape_break, summarize};
use headroom_probe::sysmem;
use tch::Device;

use crate::measure::{StepPolicy, Stepper};
use crate::workloads::{self, parameter_count};
use crate::{alloc, device, TorchError};

/// Runs the sweep `req`, handing every event to `emit`. Errors before the `hello` event mean
/// nothing was measured (bad device, workload, shape or model).
pub fn run_sweep(req: &SweepRequest, emit: &mut dyn FnMut(Event)) -> Result<(), TorchError> {
    let dev = device::resolve(&req.device)?;
    crate::fit_threads(req.threads, dev, emit)?;
    let info = device::info(dev)?;
    let mut budget = req.budget.resolve(info.capacity, info.available);
    let ceiling = headroom_model::budget::accelerator_ceiling(info.capacity);
    if device::accel_index(dev).is_some() && budget > ceiling {
        emit(Event::Warning {
            message: format!(
                "the budget {} leaves the allocator no room to fragment over a long run; the sweep \
                 keeps {:.0}% of {} free and uses {} (a batch that peaks in that last part fits a \
                 few steps but can run out of memory later)",
                format_bytes(budget),
                headroom_model::budget::FRAGMENTATION_MARGIN * 100.0,
                info.label,
                format_bytes(ceiling)
            ),
        });
        budget = ceiling;
    }
    if dev == Device::Mps {
        set_mps_watermark(budget, info.capacity);
    }
    if budget > info.available {
        emit(Event::Warning {
            message: format!(
                "the budget {} is above the {} available on {} now; points may swap or fail",
                format_bytes(budget),
                format_bytes(info.available),
                info.label
            ),
        });
    }
    let workload = workloads::build(&req.workload, req.input_shape.as_deref(), req.dtype, dev)?;
    let (name, shape, params) = (
        workload.name.clone(),
        workload.input_shape.clone(),
        parameter_count(&workload.vs),
    );
    let mut stepper =
        Stepper::new(workload, dev, req.mode == Mode::Train)?.with_host_inputs(req.host_inputs);
    stepper.probe()?;
    let accel = device::accel_index(dev);
    let baseline = match accel {
        Some(i) => alloc::device_stats(i).ok().map(|s| s.reserved_current),
        None => sysmem::process_memory().map(|(rss, _)| rss),
    };
    emit(Event::Hello(crate::hello(
        &info, name, shape, params, budget,
    )));

    let policy = StepPolicy {
        timed_steps: req.steps,
        ..StepPolicy::default()
    };
    let plan = match req.plan.clone() {
        BatchPlan::Search { start, max: 0 } => BatchPlan::Search {
            start,
            max: default_max_batch(dev),
        },
        other => other,
    };
    let mut planner = Planner::new(plan, budget, baseline, req.predict);
    let mut points: Vec<Point> = Vec::new();
    for p in &req.prior {
        planner.record(p.batch, p.status, p.peak_bytes, p.samples_per_s);
        points.push(p.clone());
    }
    let over_budget = |mut p: Point| {
        if let (PointStatus::Ok, Some(peak)) = (p.status, p.peak_bytes) {
            if peak > budget {
                p.status = PointStatus::OverBudget;
                p.message = Some(format!(
                    "peak {} is above the {} budget",
                    format_bytes(peak),
                    format_bytes(budget)
                ));
            }
        }
        p
    };
    let mut again: Vec<u32> = Vec::new();
    loop {
        let point = match planner.next_step() {
            Next::Run { batch, predicted } => {
                let mut p = stepper.measure(batch, &policy, emit);
                p.predicted_peak_bytes = predicted;
                over_budget(p)
            }
            Next::Skip { batch, predicted } => {
                let mut p = Point::failed(
                    batch,
                    PointStatus::OverBudget,
                    format!(
                        "predicted peak {} is above the {} budget; not run",
                        format_bytes(predicted),
                        format_bytes(budget)
                    ),
                );
                p.predicted_peak_bytes = Some(predicted);
                p
            }
            Next::Done { limit } => {
                emit(Event::Result(summarize(&points, limit, budget)));
                return Ok(());
            }
        };
        planner.record(
            point.batch,
            point.status,
            point.peak_bytes,
            point.samples_per_s,
        );
        emit(Event::Point(point.clone()));
        points.push(point);
        // A drop between two rises is measured once more before it is believed.
        if let Some(b) =
            shape_break(&points).filter(|b| !again.contains(b) && again.len() < MAX_AGAIN)
        {
            again.push(b);
            let first = points.iter().find(|p| p.batch == b).cloned();
            let mut p = over_budget(stepper.measure(b, &policy, emit));
            if p.status == PointStatus::Ok {
                p.predicted_peak_bytes = first.as_ref().and_then(|f| f.predicted_peak_bytes);
                p.remeasured_from = first.and_then(|f| f.samples_per_s);
                planner.replace(b, p.status, p.peak_bytes, p.samples_per_s);
                emit(Event::Point(p.clone()));
                upsert_point(&mut points, p);
            }
        }
    }
}

/// At most this many points of one sweep are measured again for breaking the curve's shape.
const MAX_AGAIN: usize = 3;

/// The largest batch a search visits when the request leaves it to the device (`max: 0`): small
/// on the CPU, where big batches take minutes per step, large on accelerators.
pub fn default_max_batch(dev: Device) -> u32 {
    if dev == Device::Cpu {
        512
    } else {
        16_384
    }
}

/// MPS raises an OOM instead of swapping when its high watermark is at or below the budget. The
/// ratio is relative to the recommended working set and must be set before MPS allocates.
fn set_mps_watermark(budget: u64, recommended: u64) {
    if recommended == 0 || std::env::var_os("PYTORCH_MPS_HIGH_WATERMARK_RATIO").is_some() {
        return;
    }
    #[allow(clippy::cast_precision_loss)]
    let ratio = (budget as f64 / recommended as f64).clamp(0.05, 2.0);
    std::env::set_var("PYTORCH_MPS_HIGH_WATERMARK_RATIO", format!("{ratio:.3}"));
}
