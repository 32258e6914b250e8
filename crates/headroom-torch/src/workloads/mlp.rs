//! `mlp`: a three-layer perceptron on flattened inputs (MNIST-sized by default).

use tch::nn::{self, Module};
use tch::Tensor;

use super::{check_shape, InputKind, Layer, Model, TargetKind};
use crate::TorchError;

const HIDDEN: i64 = 1024;
const CLASSES: i64 = 10;

struct Mlp {
    fc1: nn::Linear,
    fc2: nn::Linear,
    fc3: nn::Linear,
    features: i64,
}

impl Model for Mlp {
    fn forward(&self, x: &Tensor, _train: bool) -> Result<Tensor, TorchError> {
        let h = x.f_flatten(1, -1)?;
        let h = self.fc1.forward(&h).relu();
        let h = self.fc2.forward(&h).relu();
        Ok(self.fc3.forward(&h))
    }

    #[allow(clippy::cast_precision_loss)]
    fn layers(&self) -> Vec<Layer<'_>> {
        let flops = |i: i64, o: i64| Some(2.0 * (i * o) as f64);
        vec![
            Layer {
                name: "fc1".into(),
                flops_per_sample: flops(self.features, HIDDEN),
                forward: Box::new(|x| Ok(self.fc1.forward(&x.f_flatten(1, -1)?).relu())),
            },
            Layer {
                name: "fc2".into(),
                flops_per_sample: flops(HIDDEN, HIDDEN),
                forward: Box::new(|x| Ok(self.fc2.forward(x).relu())),
            },
            Layer {
                name: "fc3".into(),
                flops_per_sample: flops(HIDDEN, CLASSES),
                forward: Box::new(|x| Ok(self.fc3.forward(x))),
            },
        ]
    }
}

pub(super) type Built = (Box<dyn Model>, Vec<i64>, InputKind, TargetKind, Option<f64>);

pub(super) fn build(root: &nn::Path<'_>, shape: Option<&[i64]>) -> Result<Built, TorchError> {
    let shape = shape.map_or_else(|| vec![784], <[i64]>::to_vec);
    check_shape(&shape, "mlp", 1..=4)?;
    let features: i64 = shape.iter().product();
    let fc1 = nn::linear(root / "fc1", features, HIDDEN, Default::default());
    let fc2 = nn::linear(root / "fc2", HIDDEN, HIDDEN, Default::default());
    let fc3 = nn::linear(root / "fc3", HIDDEN, CLASSES, Default::default());
    #[allow(clippy::cast_precision_loss)]
    let flops = 2.0 * (features * HIDDEN + HIDDEN * HIDDEN + HIDDEN * CLASSES) as f64;
    Ok((
        Box::new(Mlp {
            fc1,
            fc2,
            fc3,
            features,
        }),
        shape,
        InputKind::Float,
        TargetKind::Class { classes: CLASSES },
        Some(flops),
    ))
}
