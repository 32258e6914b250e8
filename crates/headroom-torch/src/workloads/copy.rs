//! `copy`: each sample is a vector of N values that the forward copies once; memory-bandwidth
//! bound. With `--mode infer` a point is a pure device copy (read N, write N), so samples/s times
//! twice the sample's bytes is the device's copy bandwidth. Training multiplies by one learned
//! scale instead (the same traffic forward) so the step has a gradient to follow.

use std::cell::RefCell;

use tch::nn;
use tch::Tensor;

use super::mlp::Built;
use super::{check_shape, InputKind, Model, TargetKind};
use crate::TorchError;

/// Values per sample by default: 16 Mi (64 MiB in f32).
pub const DEFAULT_LEN: i64 = 1 << 24;

struct Copy {
    scale: Tensor,
    /// The destination of the inference copy, kept between steps (as a copy into a preallocated
    /// buffer would be): a fresh allocation per step would measure the allocator, and on the CPU
    /// the page faults of new memory, instead of the copy.
    out: RefCell<Option<Tensor>>,
}

impl Model for Copy {
    fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor, TorchError> {
        if train {
            return Ok(x.f_mul(&self.scale)?);
        }
        let mut out = self.out.borrow_mut();
        let reuse = out.as_ref().is_some_and(|y| {
            y.size() == x.size() && y.kind() == x.kind() && y.device() == x.device()
        });
        if !reuse {
            *out = Some(x.f_empty_like()?);
        }
        let y = out.as_mut().expect("set above");
        y.f_copy_(x)?;
        Ok(y.shallow_clone())
    }
}

pub(super) fn build(root: &nn::Path<'_>, shape: Option<&[i64]>) -> Result<Built, TorchError> {
    let n = match shape {
        None => DEFAULT_LEN,
        Some(s) => {
            check_shape(s, "copy", 1..=1)?;
            s[0]
        }
    };
    let scale = root.var("scale", &[1], nn::Init::Const(1.0));
    Ok((
        Box::new(Copy {
            scale,
            out: RefCell::new(None),
        }),
        vec![n],
        InputKind::Float,
        TargetKind::None,
        None,
    ))
}
