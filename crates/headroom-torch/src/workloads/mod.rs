//! The workloads a sweep measures: built-in models (a real training step each: forward, loss,
//! backward, optimizer) and TorchScript modules the user exported.

mod cnn;
mod copy;
mod matmul;
mod mlp;
mod script;
mod transformer;

use headroom_model::error::ErrorCode;
use std::path::Path;

use headroom_model::protocol::{Dtype, BUILTIN_WORKLOADS};
use tch::{nn, Device, Kind, Tensor};

use crate::TorchError;

/// What the synthetic inputs of a workload are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// Real-valued features in the model's dtype (images, vectors, matrices).
    Float,
    /// Token ids in `0..vocab`.
    Tokens { vocab: i64 },
}

/// What the loss compares the output with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// One class id per sample.
    Class { classes: i64 },
    /// One class id per token (language modelling).
    TokenClass { vocab: i64 },
    /// No target: the loss is the mean square of the output.
    None,
}

/// A model ready to step.
pub trait Model {
    /// Output for a batch of inputs already on the device.
    fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor, TorchError>;

    /// Its top-level layers in order, each one's output the next one's input (for `profile`);
    /// empty when the model cannot be taken apart that way.
    fn layers(&self) -> Vec<Layer<'_>> {
        Vec::new()
    }

    /// Puts the model in eval mode where it keeps one of its own (a TorchScript module; the
    /// built-in ones take `train` on every call).
    fn set_eval(&mut self) -> Result<(), TorchError> {
        Ok(())
    }
}

impl std::fmt::Debug for Layer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer")
            .field("name", &self.name)
            .field("flops_per_sample", &self.flops_per_sample)
            .finish_non_exhaustive()
    }
}

/// One top-level layer of a model: its name, its forward FLOPs per sample where known, and its
/// forward pass (inference).
pub struct Layer<'a> {
    pub name: String,
    pub flops_per_sample: Option<f64>,
    #[allow(clippy::type_complexity)]
    pub forward: Box<dyn Fn(&Tensor) -> Result<Tensor, TorchError> + 'a>,
}

/// A workload: its model, its variables and how to feed it.
pub struct Workload {
    pub name: String,
    pub vs: nn::VarStore,
    pub model: Box<dyn Model>,
    pub input_shape: Vec<i64>,
    pub input: InputKind,
    pub target: TargetKind,
    pub kind: Kind,
    /// Forward FLOPs per sample (matrix products), where known.
    pub forward_flops: Option<f64>,
    /// Backward FLOPs as a multiple of the forward's: 2 where gradients flow to inputs and
    /// weights, 1 for `matmul`, whose input needs no gradient.
    pub backward_factor: f64,
    /// The TorchScript file it was loaded from (a user's model), `None` for a built-in one.
    pub source: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workload")
            .field("name", &self.name)
            .field("input_shape", &self.input_shape)
            .finish()
    }
}

/// The libtorch kind for a dtype.
pub fn kind_of(dtype: Dtype) -> Kind {
    match dtype {
        Dtype::F32 => Kind::Float,
        Dtype::F16 => Kind::Half,
        Dtype::Bf16 => Kind::BFloat16,
    }
}

/// Builds workload `spec` (a built-in name or a path ending in `.pt`/`.pth`) on `device`.
pub fn build(
    spec: &str,
    input_shape: Option<&[i64]>,
    dtype: Dtype,
    device: Device,
) -> Result<Workload, TorchError> {
    let kind = kind_of(dtype);
    tch::manual_seed(0);
    let mut vs = nn::VarStore::new(device);
    let looks_like_file = spec.ends_with(".pt")
        || spec.ends_with(".pth")
        || spec.contains('/')
        || Path::new(spec).exists();
    let mut w = if looks_like_file {
        script::build(Path::new(spec), input_shape, &mut vs)?
    } else {
        let root = vs.root();
        let (model, shape, input, target, flops) = match spec {
            "mlp" => mlp::build(&root, input_shape)?,
            "cnn" => cnn::build(&root, input_shape)?,
            "vit-tiny" => transformer::build_vit(&root, input_shape)?,
            "gpt-tiny" => transformer::build_gpt(&root, input_shape)?,
            "matmul" => matmul::build(&root, input_shape)?,
            "copy" => copy::build(&root, input_shape)?,
            other => {
                return Err(TorchError::bad(
                    ErrorCode::BadWorkload,
                    format!(
                    "unknown workload {other:?}: use one of {} or a TorchScript file (model.pt)",
                    BUILTIN_WORKLOADS.join(", ")
                ),
                ))
            }
        };
        Workload {
            name: spec.to_owned(),
            vs,
            model,
            input_shape: shape,
            input,
            target,
            kind,
            forward_flops: flops,
            backward_factor: if spec == "matmul" { 1.0 } else { 2.0 },
            source: None,
        }
    };
    if kind != Kind::Float {
        w.vs.set_kind(kind);
    }
    w.kind = kind;
    Ok(w)
}

/// Checks a user-given input shape: every dimension positive, at most `max_dims` of them.
pub(crate) fn check_shape(
    shape: &[i64],
    name: &str,
    dims: std::ops::RangeInclusive<usize>,
) -> Result<(), TorchError> {
    if !dims.contains(&shape.len()) || shape.iter().any(|d| *d <= 0) {
        return Err(TorchError::bad(
            ErrorCode::BadShape,
            format!(
                "input shape {} does not fit {name}: it takes {}..={} positive dimensions per sample",
                fmt_shape(shape),
                dims.start(),
                dims.end()
            ),
        ));
    }
    Ok(())
}

/// `3x224x224`.
pub fn fmt_shape(shape: &[i64]) -> String {
    shape
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// Number of scalar parameters.
pub fn parameter_count(vs: &nn::VarStore) -> u64 {
    vs.trainable_variables()
        .iter()
        .map(|t| u64::try_from(t.numel()).unwrap_or(0))
        .sum()
}
