//! `headroom numerics --workload W` in the worker: a built-in model or a user's TorchScript file
//! built twice from one seed — a reference on the CPU in f32 and a compared copy on the device
//! in the dtype asked for, its weights copied from the reference — both in eval mode on one batch
//! made on the CPU. Each top-level layer's output (the chain `profile` times, each side feeding
//! its own previous output on), the model's output, and the gradients of the output's sum are
//! compared as the observer compares a script's model: the largest absolute difference, and it
//! over the reference's largest magnitude.

use std::time::Instant;

use headroom_model::error::ErrorCode;
use headroom_model::numerics::{Compared, NumericsReport};
use headroom_model::protocol::{Dtype, Event, NumericsRequest};
use tch::{Device, Kind, Tensor};

use crate::measure::guarded;
use crate::profile::ScriptChildren;
use crate::workloads::{self, InputKind, Workload};
use crate::{device, TorchError};

/// What a perturbed layer's output is scaled by on the compared side (a wrong layer, for tests).
const PERTURB: f64 = 1.04;

/// The largest absolute difference of `test` from `reference`, and it over the reference's
/// largest magnitude (an all-zero reference: the difference itself). `None` when the shapes
/// differ or either is not floating point.
pub fn error(test: &Tensor, reference: &Tensor) -> Result<Option<(f64, f64)>, TorchError> {
    if test.size() != reference.size()
        || !test.is_floating_point()
        || !reference.is_floating_point()
    {
        return Ok(None);
    }
    if reference.numel() == 0 {
        return Ok(Some((0.0, 0.0)));
    }
    let a = test.f_to_device(Device::Cpu)?.f_to_kind(Kind::Double)?;
    let b = reference
        .f_to_device(Device::Cpu)?
        .f_to_kind(Kind::Double)?;
    let diff = f64::try_from(a.f_sub(&b)?.f_abs()?.f_max()?)?;
    let scale = f64::try_from(b.f_abs()?.f_max()?)?;
    Ok(Some((diff, if scale > 0.0 { diff / scale } else { diff })))
}

fn compared(name: &str, e: (f64, f64)) -> Compared {
    Compared {
        name: name.to_owned(),
        abs: e.0,
        rel: e.1,
    }
}

/// One batch of inputs on the CPU in f32 (token ids for a language model), from seed 1: both
/// sides get these, moved.
fn inputs(w: &Workload, batch: u32) -> Result<Tensor, TorchError> {
    tch::manual_seed(1);
    let mut shape = vec![i64::from(batch)];
    shape.extend_from_slice(&w.input_shape);
    Ok(match w.input {
        InputKind::Float => Tensor::f_randn(shape.as_slice(), (Kind::Float, Device::Cpu))?,
        InputKind::Tokens { vocab } => {
            Tensor::f_randint(vocab, shape.as_slice(), (Kind::Int64, Device::Cpu))?
        }
    })
}

/// The reference's input for the compared side: on its device, floats in its kind.
fn moved(x: &Tensor, dev: Device, kind: Kind) -> Result<Tensor, TorchError> {
    let x = x.f_to_device(dev)?;
    Ok(if x.is_floating_point() {
        x.f_to_kind(kind)?
    } else {
        x
    })
}

type Chain<'a> = Vec<(
    String,
    Box<dyn Fn(&Tensor) -> Result<Tensor, TorchError> + 'a>,
)>;

/// Runs both chains of layers side by side, each on its own previous output, and compares each
/// layer's output; the compared side's `perturb` layer is scaled first.
fn compare_chains(
    reference: &Chain<'_>,
    test: &Chain<'_>,
    x_ref: &Tensor,
    x_test: &Tensor,
    perturb: Option<&str>,
) -> Result<Vec<Compared>, TorchError> {
    let mut out = Vec::new();
    let (mut a, mut b) = (x_ref.shallow_clone(), x_test.shallow_clone());
    for ((name, f), (_, g)) in reference.iter().zip(test) {
        let ra = tch::no_grad(|| f(&a)).map_err(|e| layer_failed(name, &e))?;
        let mut rb = tch::no_grad(|| g(&b)).map_err(|e| layer_failed(name, &e))?;
        if perturb == Some(name.as_str()) && rb.is_floating_point() {
            rb = rb.f_mul_scalar(PERTURB)?;
        }
        if let Some(e) = error(&rb, &ra)? {
            out.push(compared(name, e));
        }
        (a, b) = (ra, rb);
    }
    Ok(out)
}

fn layer_failed(name: &str, e: &TorchError) -> TorchError {
    TorchError::bad(
        ErrorCode::BadModel,
        format!(
            "layer {name} failed ({e}): layer-by-layer numerics need top-level layers that run \
             in order, as in an nn.Sequential"
        ),
    )
}

fn script_chain(c: &ScriptChildren) -> Chain<'_> {
    c.names
        .iter()
        .map(|n| {
            let f = Box::new(move |t: &Tensor| c.forward(n, t))
                as Box<dyn Fn(&Tensor) -> Result<Tensor, TorchError> + '_>;
            (n.clone(), f)
        })
        .collect()
}

fn layer_chain(v: Vec<workloads::Layer<'_>>) -> Chain<'_> {
    v.into_iter().map(|l| (l.name, l.forward)).collect()
}

/// The layers of both sides, compared; or why there are none.
fn layer_errors(
    req: &NumericsRequest,
    reference: &Workload,
    test: &Workload,
    dev: Device,
    x_ref: &Tensor,
    x_test: &Tensor,
) -> Result<(Vec<Compared>, Option<String>), TorchError> {
    let perturb = req.perturb.as_deref();
    if let Some(path) = &reference.source {
        if req.dtype != Dtype::F32 {
            return Ok((
                Vec::new(),
                Some(
                    "a TorchScript module's layers are compared in f32 only: its children are \
                     loaded as saved; the output and the gradients are compared"
                        .to_owned(),
                ),
            ));
        }
        let (rc, tc) = (
            ScriptChildren::load(path, reference.vs.device())?,
            ScriptChildren::load(path, dev)?,
        );
        if rc.names.is_empty() {
            return Ok((
                Vec::new(),
                Some("the module has no child modules to compare one by one".to_owned()),
            ));
        }
        let (a, b) = (script_chain(&rc), script_chain(&tc));
        return Ok((compare_chains(&a, &b, x_ref, x_test, perturb)?, None));
    }
    let (ra, ta) = (reference.model.layers(), test.model.layers());
    if ra.is_empty() {
        return Ok((
            Vec::new(),
            Some(format!(
                "{} is one operation: its output and gradients are compared",
                req.workload
            )),
        ));
    }
    let (a, b) = (layer_chain(ra), layer_chain(ta));
    Ok((compare_chains(&a, &b, x_ref, x_test, perturb)?, None))
}

/// The gradients of the output's sum on both sides, compared by variable name, the worst first
/// (at most 20), and the output's own error.
fn output_and_grads(
    reference: &Workload,
    test: &Workload,
    x_ref: &Tensor,
    x_test: &Tensor,
) -> Result<(Option<Compared>, Vec<Compared>), TorchError> {
    let out_ref = reference.model.forward(x_ref, false)?;
    let out_test = test.model.forward(x_test, false)?;
    let output = error(&out_test, &out_ref)?.map(|e| compared("(output)", e));
    if !out_ref.is_floating_point() || !out_ref.requires_grad() {
        return Ok((output, Vec::new()));
    }
    out_ref.f_to_kind(Kind::Float)?.f_sum(None)?.f_backward()?;
    out_test.f_to_kind(Kind::Float)?.f_sum(None)?.f_backward()?;
    let theirs = test.vs.variables();
    let mut grads = Vec::new();
    for (name, v) in reference.vs.variables() {
        let (g_ref, Some(t)) = (v.grad(), theirs.get(&name)) else {
            continue;
        };
        let g_test = t.grad();
        if !g_ref.defined() || !g_test.defined() {
            continue;
        }
        if let Some(e) = error(&g_test, &g_ref)? {
            grads.push(compared(&name, e));
        }
    }
    grads.sort_by(|a, b| b.rel.total_cmp(&a.rel).then_with(|| a.name.cmp(&b.name)));
    grads.truncate(20);
    Ok((output, grads))
}

/// Runs `req`: `hello`, then one `numerics` event.
pub fn run_numerics(req: &NumericsRequest, emit: &mut dyn FnMut(Event)) -> Result<(), TorchError> {
    if req.batch == 0 || !(req.tolerance > 0.0 && req.tolerance.is_finite()) {
        return Err(TorchError::bad(
            ErrorCode::BadRequest,
            "batch must be 1 or more and the tolerance a positive number",
        ));
    }
    let dev = device::resolve(&req.device)?;
    crate::fit_threads(req.threads, dev, emit)?;
    let info = device::info(dev)?;
    let shape = req.input_shape.as_deref();
    let ref_dev = if req.reference_on_device {
        dev
    } else {
        Device::Cpu
    };
    let mut reference = workloads::build(&req.workload, shape, Dtype::F32, ref_dev)?;
    let mut test = workloads::build(&req.workload, shape, req.dtype, dev)?;
    guarded(|| {
        test.vs.copy(&reference.vs)?;
        Ok::<_, TorchError>(())
    })?;
    reference.model.set_eval()?;
    test.model.set_eval()?;
    emit(Event::Hello(crate::hello(
        &info,
        test.name.clone(),
        test.input_shape.clone(),
        workloads::parameter_count(&test.vs),
        info.available,
    )));
    let began = Instant::now();
    let x_cpu = inputs(&reference, req.batch)?;
    let x_ref = moved(&x_cpu, ref_dev, Kind::Float)?;
    let x_test = moved(&x_cpu, dev, test.kind)?;
    let (layers, note) = guarded(|| layer_errors(req, &reference, &test, dev, &x_ref, &x_test))?;
    let (output, grads) = guarded(|| output_and_grads(&reference, &test, &x_ref, &x_test))?;
    device::synchronize(dev)?;
    let dtype = match req.dtype {
        Dtype::F32 => "f32",
        Dtype::Bf16 => "bf16",
        Dtype::F16 => "f16",
    };
    let mut mode = format!(
        "eval (dropout off), batch {}, the compared copy's weights and inputs in {dtype}",
        req.batch
    );
    if let Some(n) = note {
        mode.push_str("; ");
        mode.push_str(&n);
    }
    emit(Event::Numerics(NumericsReport {
        device: device::label(dev),
        dtype: dtype.to_owned(),
        reference: format!("{} f32", device::label(ref_dev)),
        mode,
        tolerance: req.tolerance,
        layers,
        output,
        grads,
        seconds: began.elapsed().as_secs_f64(),
        fallback_ops: Vec::new(),
        // libtorch lets cuDNN's convolutions use TF32 unless told not to (matmuls not), and
        // the worker never tells it: on CUDA the compared f32 convolutions are TF32's.
        tf32: if dev.is_cuda() {
            vec!["convolutions".to_owned()]
        } else {
            Vec::new()
        },
        error: None,
    }));
    Ok(())
}
