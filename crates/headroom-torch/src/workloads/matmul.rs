//! `matmul`: each sample is an N×N matrix multiplied by a learned N×N weight; FLOP/s bound.

use tch::nn;
use tch::Tensor;

use super::mlp::Built;
use super::{check_shape, InputKind, Model, TargetKind};
use crate::TorchError;

struct MatMul {
    w: Tensor,
}

impl Model for MatMul {
    fn forward(&self, x: &Tensor, _train: bool) -> Result<Tensor, TorchError> {
        Ok(x.f_matmul(&self.w)?)
    }
}

pub(super) fn build(root: &nn::Path<'_>, shape: Option<&[i64]>) -> Result<Built, TorchError> {
    let n = match shape {
        None => 1024,
        Some([n]) | Some([n, _]) => *n,
        Some(other) => {
            check_shape(other, "matmul", 1..=2)?;
            other[0]
        }
    };
    check_shape(&[n], "matmul", 1..=1)?;
    let w = root.var(
        "w",
        &[n, n],
        nn::Init::Randn {
            mean: 0.0,
            stdev: 1.0 / (n as f64).sqrt(),
        },
    );
    #[allow(clippy::cast_precision_loss)]
    let flops = 2.0 * (n as f64).powi(3);
    Ok((
        Box::new(MatMul { w }),
        vec![n, n],
        InputKind::Float,
        TargetKind::None,
        Some(flops),
    ))
}
