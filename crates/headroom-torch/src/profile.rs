//! `headroom profile` in the worker: one batch measured as a sweep point measures it (data,
//! forward, backward with the optimizer), then each top-level layer's forward alone, synchronised
//! before and after, the output of one the input of the next, against its share of the FLOPs —
//! so one slow layer stands out. Built-in models list their layers; a user's TorchScript module
//! is taken apart through its top-level children (the C++ shim), which works when they run in
//! order, as in an `nn.Sequential`.

use headroom_model::error::ErrorCode;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::time::Instant;

use headroom_model::protocol::{Event, LayerTime, ProfileReport, ProfileRequest};
use tch::{Device, Tensor};

use crate::measure::{guarded, start_training_job, StepPolicy};
use crate::workloads::Layer;
use crate::{device, TorchError};

extern "C" {
    fn hr_script_load(
        path: *const c_char,
        device: *const c_char,
        out: *mut *mut c_void,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    fn hr_script_free(m: *mut c_void);
    fn hr_script_children(
        m: *mut c_void,
        names: *mut c_char,
        names_len: usize,
        count: *mut c_int,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    fn hr_script_child_weights(
        m: *mut c_void,
        name: *const c_char,
        out: *mut c_char,
        out_len: usize,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    fn hr_script_child_forward(
        m: *mut c_void,
        name: *const c_char,
        x: *mut c_void,
        out: *mut *mut c_void,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
}

fn shim_error(what: &str, buf: &[c_char]) -> TorchError {
    // SAFETY: the shim always writes a NUL-terminated message into `buf` on failure.
    let msg = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .lines()
        .next()
        .unwrap_or("")
        .to_owned();
    TorchError::bad(ErrorCode::BadModel, format!("{what}: {msg}"))
}

/// A TorchScript module loaded a second time, in eval mode, to run its children one by one.
pub(crate) struct ScriptChildren {
    handle: *mut c_void,
    pub(crate) names: Vec<String>,
}

impl ScriptChildren {
    pub(crate) fn load(path: &std::path::Path, dev: Device) -> Result<Self, TorchError> {
        let device = match dev {
            Device::Cpu => "cpu".to_owned(),
            Device::Cuda(i) => format!("cuda:{i}"),
            Device::Mps => "mps".to_owned(),
            other => format!("{other:?}").to_lowercase(),
        };
        let c_path = CString::new(path.display().to_string())
            .map_err(|_| TorchError::bad(ErrorCode::BadModel, "the model path has a NUL byte"))?;
        let c_dev = CString::new(device).unwrap_or_default();
        let mut err = vec![0 as c_char; 1024];
        let mut handle = std::ptr::null_mut();
        // SAFETY: valid C strings and out pointer; the shim catches every C++ exception.
        let rc = unsafe {
            hr_script_load(
                c_path.as_ptr(),
                c_dev.as_ptr(),
                &mut handle,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 {
            return Err(shim_error("cannot load the module for its layers", &err));
        }
        let mut me = Self {
            handle,
            names: Vec::new(),
        };
        let mut names = vec![0 as c_char; 64 * 1024];
        let mut count: c_int = 0;
        // SAFETY: `handle` came from hr_script_load; buffers are as long as said.
        let rc = unsafe {
            hr_script_children(
                me.handle,
                names.as_mut_ptr(),
                names.len(),
                &mut count,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 {
            return Err(shim_error("cannot list the module's children", &err));
        }
        // SAFETY: NUL-terminated by the shim.
        let all = unsafe { CStr::from_ptr(names.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        me.names = all
            .lines()
            .map(str::to_owned)
            .filter(|n| !n.is_empty())
            .collect();
        Ok(me)
    }

    /// The shapes of the child's weights.
    fn weights(&self, name: &str) -> Result<Vec<Vec<i64>>, TorchError> {
        let c_name = CString::new(name).unwrap_or_default();
        let mut err = vec![0 as c_char; 1024];
        let mut out = vec![0 as c_char; 64 * 1024];
        // SAFETY: valid handle and buffers of the lengths given.
        let rc = unsafe {
            hr_script_child_weights(
                self.handle,
                c_name.as_ptr(),
                out.as_mut_ptr(),
                out.len(),
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 {
            return Err(shim_error(
                &format!("cannot read the weights of {name}"),
                &err,
            ));
        }
        // SAFETY: NUL-terminated by the shim.
        let text = unsafe { CStr::from_ptr(out.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Ok(parse_shapes(&text))
    }

    pub(crate) fn forward(&self, name: &str, x: &Tensor) -> Result<Tensor, TorchError> {
        let c_name = CString::new(name).unwrap_or_default();
        let mut err = vec![0 as c_char; 1024];
        let mut out = std::ptr::null_mut();
        // SAFETY: `x` stays alive for the call; the shim only reads it and returns a new tensor.
        let rc = unsafe {
            hr_script_child_forward(
                self.handle,
                c_name.as_ptr(),
                x.as_ptr().cast_mut().cast(),
                &mut out,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 || out.is_null() {
            return Err(shim_error(&format!("layer {name} failed"), &err));
        }
        // SAFETY: a `torch::Tensor*` made with `new` by the shim; tch owns and deletes it now.
        Ok(unsafe { Tensor::from_ptr(out.cast()) })
    }
}

impl Drop for ScriptChildren {
    fn drop(&mut self) {
        // SAFETY: made by hr_script_load, freed once.
        unsafe { hr_script_free(self.handle) };
    }
}

/// One layer's forward pass.
type LayerFn<'a> = dyn Fn(&Tensor) -> Result<Tensor, TorchError> + 'a;

/// "64x256;10x256" into shapes.
fn parse_shapes(text: &str) -> Vec<Vec<i64>> {
    text.split(';')
        .filter(|s| !s.is_empty())
        .map(|s| s.split('x').filter_map(|d| d.parse().ok()).collect())
        .collect()
}

/// Forward FLOPs of a TorchScript child for one batch, estimated from its weights: a 2-D weight
/// (linear) costs 2·in·out per row of the output, a 4-D one (convolution) 2·(in/groups)·kh·kw per
/// output element; other layers count none.
#[allow(clippy::cast_precision_loss)]
pub fn estimate_flops(weights: &[Vec<i64>], output: &[i64]) -> f64 {
    let out_elems: i64 = output.iter().product();
    let rows = output.last().map_or(0, |last| out_elems / (*last).max(1));
    weights
        .iter()
        .map(|w| match w.as_slice() {
            [o, i] => 2.0 * (*o * *i) as f64 * rows as f64,
            [_, rest @ ..] if rest.len() == 3 => {
                2.0 * (rest.iter().product::<i64>()) as f64 * out_elems as f64
            }
            _ => 0.0,
        })
        .sum::<f64>()
        + 0.0 // an empty sum is -0.0
}

/// Times `layers` in a chain on `x`: two untimed passes, then `reps` timed; median per layer.
fn time_chain(
    layers: &[(String, &LayerFn<'_>)],
    x: &Tensor,
    dev: Device,
    reps: u32,
) -> Result<Vec<(f64, Vec<i64>)>, TorchError> {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); layers.len()];
    let mut shapes = vec![Vec::new(); layers.len()];
    for rep in 0..reps + 2 {
        let mut h = x.shallow_clone();
        for (i, (name, f)) in layers.iter().enumerate() {
            device::synchronize(dev)?;
            let t = Instant::now();
            let out = tch::no_grad(|| f(&h)).map_err(|e| {
                let prev = if i == 0 {
                    "the input".to_owned()
                } else {
                    format!("the output of {}", layers[i - 1].0)
                };
                TorchError::bad(
                    ErrorCode::BadModel,
                    format!(
                        "layer {name} failed on {prev} ({e}): per-layer times need top-level \
                         layers that run in order, as in an nn.Sequential"
                    ),
                )
            })?;
            device::synchronize(dev)?;
            if rep >= 2 {
                times[i].push(t.elapsed().as_secs_f64() * 1e3);
            }
            shapes[i] = out.size();
            h = out;
        }
    }
    Ok(times
        .into_iter()
        .zip(shapes)
        .map(|(mut t, s)| {
            t.sort_by(f64::total_cmp);
            (t[t.len() / 2], s)
        })
        .collect())
}

/// Runs `req`: `hello`, then one `profile` event.
pub fn run_profile(req: &ProfileRequest, emit: &mut dyn FnMut(Event)) -> Result<(), TorchError> {
    if req.batch == 0 || req.reps == 0 {
        return Err(TorchError::bad(
            ErrorCode::BadRequest,
            "batch and reps must be 1 or more",
        ));
    }
    let (mut stepper, dev) = start_training_job(
        &req.device,
        &req.workload,
        req.input_shape.as_deref(),
        req.dtype,
        req.threads,
        emit,
    )?;
    let source = stepper.workload.source.clone();
    let policy = StepPolicy {
        split_steps: 5,
        ..StepPolicy::default()
    };
    let point = stepper.measure(req.batch, &policy, emit);
    let x = guarded(|| stepper.device_input(req.batch))?;
    let (layers, note) = match &source {
        Some(path) => {
            let children = ScriptChildren::load(path, dev)?;
            if children.names.is_empty() {
                (
                    Vec::new(),
                    Some("the module has no child modules to time one by one".to_owned()),
                )
            } else {
                let fns: Vec<Box<LayerFn<'_>>> = children
                    .names
                    .iter()
                    .map(|n| {
                        let c = &children;
                        Box::new(move |t: &Tensor| c.forward(n, t)) as Box<LayerFn<'_>>
                    })
                    .collect();
                let chain: Vec<(String, &LayerFn<'_>)> = children
                    .names
                    .iter()
                    .zip(&fns)
                    .map(|(n, f)| (n.clone(), f.as_ref()))
                    .collect();
                let timed = guarded(|| time_chain(&chain, &x, dev, req.reps))?;
                let mut rows = Vec::new();
                for (n, (ms, out)) in children.names.iter().zip(timed) {
                    let w = children.weights(n)?;
                    rows.push((n.clone(), ms, Some(estimate_flops(&w, &out)), out));
                }
                (rows, None)
            }
        }
        None => {
            let model_layers: Vec<Layer<'_>> = stepper.workload.model.layers();
            if model_layers.is_empty() {
                (
                    Vec::new(),
                    Some(format!(
                        "per-layer times are not available for {}: it is one operation \
                         (mlp, cnn, vit-tiny, gpt-tiny and TorchScript modules have layers)",
                        req.workload
                    )),
                )
            } else {
                let chain: Vec<(String, &LayerFn<'_>)> = model_layers
                    .iter()
                    .map(|l| (l.name.clone(), l.forward.as_ref()))
                    .collect();
                let timed = guarded(|| time_chain(&chain, &x, dev, req.reps))?;
                let batch = f64::from(req.batch);
                let rows = model_layers
                    .iter()
                    .zip(timed)
                    .map(|(l, (ms, out))| {
                        (
                            l.name.clone(),
                            ms,
                            l.flops_per_sample.map(|f| f * batch),
                            out,
                        )
                    })
                    .collect();
                (rows, None)
            }
        }
    };
    let total_ms: f64 = layers.iter().map(|(_, ms, _, _)| ms).sum();
    let all_flops: Option<f64> = layers
        .iter()
        .map(|(_, _, f, _)| *f)
        .sum::<Option<f64>>()
        .filter(|f| *f > 0.0);
    let layers = layers
        .into_iter()
        .map(|(name, ms, flops, out)| LayerTime {
            name,
            forward_ms: ms,
            time_share: if total_ms > 0.0 { ms / total_ms } else { 0.0 },
            flops,
            flops_share: all_flops.and_then(|t| flops.map(|f| f / t)),
            output_shape: out,
        })
        .collect();
    emit(Event::Profile(ProfileReport {
        batch: req.batch,
        point,
        layers,
        layers_note: note,
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_from_weights() {
        assert_eq!(
            parse_shapes("64x256;16x3x3x3"),
            vec![vec![64, 256], vec![16, 3, 3, 3]]
        );
        assert!(parse_shapes("").is_empty());
        // Linear 256 -> 64 on a batch of 32 rows: 2·256·64·32.
        assert_eq!(
            estimate_flops(&[vec![64, 256]], &[32, 64]),
            2.0 * 256.0 * 64.0 * 32.0
        );
        // Conv 3 -> 16, 3x3, output 8x16x30x30: 2·3·3·3 per output element.
        let out = [8, 16, 30, 30];
        let elems = (8 * 16 * 30 * 30) as f64;
        assert_eq!(
            estimate_flops(&[vec![16, 3, 3, 3]], &out),
            2.0 * 27.0 * elems
        );
        // No weights (an activation, a loop of element-wise ops): none.
        assert_eq!(estimate_flops(&[], &[32, 64]), 0.0);
        assert_eq!(estimate_flops(&[vec![64]], &[32, 64]), 0.0);
    }
}
