//! `cnn`: a small ResNet (three stages of two basic blocks, 32/64/128 channels) for 3×32×32 images.

use tch::nn::{self, ModuleT};
use tch::Tensor;

use super::mlp::Built;
use super::{check_shape, InputKind, Model, TargetKind};
use crate::TorchError;

const CLASSES: i64 = 10;
const WIDTHS: [i64; 3] = [32, 64, 128];

fn conv_bn(p: &nn::Path<'_>, c_in: i64, c_out: i64, k: i64, stride: i64) -> nn::SequentialT {
    let cfg = nn::ConvConfig {
        stride,
        padding: k / 2,
        bias: false,
        ..Default::default()
    };
    nn::seq_t()
        .add(nn::conv2d(p / "conv", c_in, c_out, k, cfg))
        .add(nn::batch_norm2d(p / "bn", c_out, Default::default()))
}

struct Block {
    body: nn::SequentialT,
    shortcut: Option<nn::SequentialT>,
}

impl Block {
    fn new(p: &nn::Path<'_>, c_in: i64, c_out: i64, stride: i64) -> Self {
        let body = nn::seq_t()
            .add(conv_bn(&(p / "a"), c_in, c_out, 3, stride))
            .add_fn(|x| x.relu())
            .add(conv_bn(&(p / "b"), c_out, c_out, 3, 1));
        let shortcut =
            (stride != 1 || c_in != c_out).then(|| conv_bn(&(p / "short"), c_in, c_out, 1, stride));
        Self { body, shortcut }
    }

    fn forward(&self, x: &Tensor, train: bool) -> Tensor {
        let skip = self
            .shortcut
            .as_ref()
            .map_or_else(|| x.shallow_clone(), |s| s.forward_t(x, train));
        (self.body.forward_t(x, train) + skip).relu()
    }
}

struct ResNet {
    stem: nn::SequentialT,
    blocks: Vec<Block>,
    fc: nn::Linear,
}

impl Model for ResNet {
    fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor, TorchError> {
        let mut h = self.stem.forward_t(x, train).relu();
        for b in &self.blocks {
            h = b.forward(&h, train);
        }
        let pooled = h.f_adaptive_avg_pool2d([1, 1])?.f_flatten(1, -1)?;
        Ok(pooled.apply(&self.fc))
    }
}

pub(super) fn build(root: &nn::Path<'_>, shape: Option<&[i64]>) -> Result<Built, TorchError> {
    let shape = shape.map_or_else(|| vec![3, 32, 32], <[i64]>::to_vec);
    check_shape(&shape, "cnn (channels x height x width)", 3..=3)?;
    if shape[1] < 4 || shape[2] < 4 {
        return Err(TorchError::bad(
            "bad_shape",
            "cnn needs images of at least 4x4 pixels, e.g. --input-shape 3x32x32",
        ));
    }
    let stem = conv_bn(&(root / "stem"), shape[0], WIDTHS[0], 3, 1);
    let mut blocks = Vec::new();
    let mut c_in = WIDTHS[0];
    for (s, &w) in WIDTHS.iter().enumerate() {
        for b in 0..2 {
            let stride = if s > 0 && b == 0 { 2 } else { 1 };
            blocks.push(Block::new(&(root / format!("s{s}b{b}")), c_in, w, stride));
            c_in = w;
        }
    }
    let fc = nn::linear(root / "fc", c_in, CLASSES, Default::default());
    let model = ResNet { stem, blocks, fc };
    Ok((
        Box::new(model),
        shape,
        InputKind::Float,
        TargetKind::Class { classes: CLASSES },
        None,
    ))
}
