//! `mlp`: a three-layer perceptron on flattened inputs (MNIST-sized by default).

use tch::nn::{self, Module};
use tch::Tensor;

use super::{check_shape, InputKind, Model, TargetKind};
use crate::TorchError;

const HIDDEN: i64 = 1024;
const CLASSES: i64 = 10;

struct Mlp {
    seq: nn::Sequential,
}

impl Model for Mlp {
    fn forward(&self, x: &Tensor, _train: bool) -> Result<Tensor, TorchError> {
        Ok(self.seq.forward(&x.f_flatten(1, -1)?))
    }
}

pub(super) type Built = (Box<dyn Model>, Vec<i64>, InputKind, TargetKind, Option<f64>);

pub(super) fn build(root: &nn::Path<'_>, shape: Option<&[i64]>) -> Result<Built, TorchError> {
    let shape = shape.map_or_else(|| vec![784], <[i64]>::to_vec);
    check_shape(&shape, "mlp", 1..=4)?;
    let features: i64 = shape.iter().product();
    let seq = nn::seq()
        .add(nn::linear(
            root / "fc1",
            features,
            HIDDEN,
            Default::default(),
        ))
        .add_fn(|x| x.relu())
        .add(nn::linear(root / "fc2", HIDDEN, HIDDEN, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(
            root / "fc3",
            HIDDEN,
            CLASSES,
            Default::default(),
        ));
    #[allow(clippy::cast_precision_loss)]
    let flops = 2.0 * (features * HIDDEN + HIDDEN * HIDDEN + HIDDEN * CLASSES) as f64;
    Ok((
        Box::new(Mlp { seq }),
        shape,
        InputKind::Float,
        TargetKind::Class { classes: CLASSES },
        Some(flops),
    ))
}
