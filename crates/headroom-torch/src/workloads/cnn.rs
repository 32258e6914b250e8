//! `cnn`: a small ResNet (three stages of two basic blocks, 32/64/128 channels) for 3×32×32 images.

use headroom_model::error::ErrorCode;
use tch::nn::{self, ModuleT};
use tch::Tensor;

use super::mlp::Built;
use super::{check_shape, InputKind, Layer, Model, TargetKind};
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
    /// Per-sample FLOPs of the stem, each block, and the head (convolutions and the linear).
    flops: Vec<f64>,
}

impl ResNet {
    fn head(&self, h: &Tensor) -> Result<Tensor, TorchError> {
        let pooled = h.f_adaptive_avg_pool2d([1, 1])?.f_flatten(1, -1)?;
        Ok(pooled.apply(&self.fc))
    }
}

impl Model for ResNet {
    fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor, TorchError> {
        let mut h = self.stem.forward_t(x, train).relu();
        for b in &self.blocks {
            h = b.forward(&h, train);
        }
        self.head(&h)
    }

    fn layers(&self) -> Vec<Layer<'_>> {
        let f = |i: usize| self.flops.get(i).copied();
        let mut v = vec![Layer {
            name: "stem".into(),
            flops_per_sample: f(0),
            forward: Box::new(|x| Ok(self.stem.forward_t(x, false).relu())),
        }];
        v.extend(self.blocks.iter().enumerate().map(|(i, b)| Layer {
            name: format!("s{}b{}", i / 2, i % 2),
            flops_per_sample: f(i + 1),
            forward: Box::new(move |h| Ok(b.forward(h, false))),
        }));
        v.push(Layer {
            name: "head".into(),
            flops_per_sample: f(self.blocks.len() + 1),
            forward: Box::new(|h| self.head(h)),
        });
        v
    }
}

/// Forward FLOPs of a k×k convolution from `c_in` to `c_out` channels over an output of
/// `h`×`w` pixels, per sample.
#[allow(clippy::cast_precision_loss)]
fn conv_flops(c_in: i64, c_out: i64, k: i64, h: i64, w: i64) -> f64 {
    2.0 * (c_in * k * k * c_out * h * w) as f64
}

pub(super) fn build(root: &nn::Path<'_>, shape: Option<&[i64]>) -> Result<Built, TorchError> {
    let shape = shape.map_or_else(|| vec![3, 32, 32], <[i64]>::to_vec);
    check_shape(&shape, "cnn (channels x height x width)", 3..=3)?;
    if shape[1] < 4 || shape[2] < 4 {
        return Err(TorchError::bad(
            ErrorCode::BadShape,
            "cnn needs images of at least 4x4 pixels, e.g. --input-shape 3x32x32",
        ));
    }
    let stem = conv_bn(&(root / "stem"), shape[0], WIDTHS[0], 3, 1);
    let (mut h, mut w_px) = (shape[1], shape[2]);
    let mut flops = vec![conv_flops(shape[0], WIDTHS[0], 3, h, w_px)];
    let mut blocks = Vec::new();
    let mut c_in = WIDTHS[0];
    for (s, &w) in WIDTHS.iter().enumerate() {
        for b in 0..2 {
            let stride = if s > 0 && b == 0 { 2 } else { 1 };
            blocks.push(Block::new(&(root / format!("s{s}b{b}")), c_in, w, stride));
            // Padded 3×3 (and 1×1) convolutions: the output is ceil(in / stride).
            h = (h + stride - 1) / stride;
            w_px = (w_px + stride - 1) / stride;
            let mut f = conv_flops(c_in, w, 3, h, w_px) + conv_flops(w, w, 3, h, w_px);
            if stride != 1 || c_in != w {
                f += conv_flops(c_in, w, 1, h, w_px);
            }
            flops.push(f);
            c_in = w;
        }
    }
    let fc = nn::linear(root / "fc", c_in, CLASSES, Default::default());
    #[allow(clippy::cast_precision_loss)]
    flops.push(2.0 * (c_in * CLASSES) as f64);
    let model = ResNet {
        stem,
        blocks,
        fc,
        flops,
    };
    Ok((
        Box::new(model),
        shape,
        InputKind::Float,
        TargetKind::Class { classes: CLASSES },
        None,
    ))
}
