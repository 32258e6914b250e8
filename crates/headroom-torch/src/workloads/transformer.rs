//! `vit-tiny` (patch 16, width 192, depth 12, 3 heads, 224×224) and `gpt-tiny` (a small causal
//! transformer), sharing one pre-norm block built on `scaled_dot_product_attention`.

use headroom_model::error::ErrorCode;
use tch::nn::{self, Module};
use tch::Tensor;

use super::mlp::Built;
use super::{check_shape, InputKind, Layer, Model, TargetKind};
use crate::TorchError;

struct Block {
    ln1: nn::LayerNorm,
    qkv: nn::Linear,
    proj: nn::Linear,
    ln2: nn::LayerNorm,
    fc1: nn::Linear,
    fc2: nn::Linear,
    heads: i64,
}

impl Block {
    fn new(p: &nn::Path<'_>, width: i64, heads: i64) -> Self {
        Self {
            ln1: nn::layer_norm(p / "ln1", vec![width], Default::default()),
            qkv: nn::linear(p / "qkv", width, 3 * width, Default::default()),
            proj: nn::linear(p / "proj", width, width, Default::default()),
            ln2: nn::layer_norm(p / "ln2", vec![width], Default::default()),
            fc1: nn::linear(p / "fc1", width, 4 * width, Default::default()),
            fc2: nn::linear(p / "fc2", 4 * width, width, Default::default()),
            heads,
        }
    }

    fn forward(&self, x: &Tensor, causal: bool) -> Result<Tensor, TorchError> {
        let (b, t, c) = x.size3()?;
        let qkv = self
            .ln1
            .forward(x)
            .apply(&self.qkv)
            .f_view([b, t, 3, self.heads, c / self.heads])?
            .f_permute([2, 0, 3, 1, 4])?;
        let (q, k, v) = (qkv.f_get(0)?, qkv.f_get(1)?, qkv.f_get(2)?);
        let att = Tensor::f_scaled_dot_product_attention(
            &q,
            &k,
            &v,
            None::<Tensor>,
            0.0,
            causal,
            None,
            false,
        )?;
        let att = att
            .f_transpose(1, 2)?
            .f_reshape([b, t, c])?
            .apply(&self.proj);
        let x = x + att;
        let mlp = self
            .ln2
            .forward(&x)
            .apply(&self.fc1)
            .f_gelu("none")?
            .apply(&self.fc2);
        Ok(x + mlp)
    }
}

fn blocks(root: &nn::Path<'_>, depth: usize, width: i64, heads: i64) -> Vec<Block> {
    (0..depth)
        .map(|i| Block::new(&(root / format!("block{i}")), width, heads))
        .collect()
}

/// Forward FLOPs per token of `depth` blocks of `width` over `tokens` tokens (matmuls only).
fn block_flops(depth: usize, width: i64, tokens: i64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let (w, t, d) = (width as f64, tokens as f64, depth as f64);
    // qkv 3w², proj w², mlp 8w² per token; attention scores and mix 2·t·w per token.
    d * t * (2.0 * 12.0 * w * w + 2.0 * 2.0 * t * w)
}

struct Vit {
    patch: nn::Conv2D,
    cls: Tensor,
    pos: Tensor,
    blocks: Vec<Block>,
    ln: nn::LayerNorm,
    head: nn::Linear,
    /// Per-sample FLOPs of the patch embedding, one block, and the head.
    flops: (f64, f64, f64),
}

impl Vit {
    fn embed(&self, x: &Tensor) -> Result<Tensor, TorchError> {
        let p = x.apply(&self.patch).f_flatten(2, -1)?.f_transpose(1, 2)?; // [b, n, w]
        let b = p.size()[0];
        let cls = self.cls.f_expand([b, -1, -1], false)?;
        Ok(Tensor::f_cat(&[cls, p], 1)? + &self.pos)
    }

    fn top(&self, h: &Tensor) -> Result<Tensor, TorchError> {
        Ok(self.ln.forward(h).f_select(1, 0)?.apply(&self.head))
    }
}

impl Model for Vit {
    fn forward(&self, x: &Tensor, _train: bool) -> Result<Tensor, TorchError> {
        let mut h = self.embed(x)?;
        for blk in &self.blocks {
            h = blk.forward(&h, false)?;
        }
        self.top(&h)
    }

    fn layers(&self) -> Vec<Layer<'_>> {
        let (patch, block, head) = self.flops;
        let mut v = vec![Layer {
            name: "patch".into(),
            flops_per_sample: Some(patch),
            forward: Box::new(|x| self.embed(x)),
        }];
        v.extend(self.blocks.iter().enumerate().map(|(i, b)| Layer {
            name: format!("block{i}"),
            flops_per_sample: Some(block),
            forward: Box::new(move |h| b.forward(h, false)),
        }));
        v.push(Layer {
            name: "head".into(),
            flops_per_sample: Some(head),
            forward: Box::new(|h| self.top(h)),
        });
        v
    }
}

pub(super) fn build_vit(root: &nn::Path<'_>, shape: Option<&[i64]>) -> Result<Built, TorchError> {
    const PATCH: i64 = 16;
    const WIDTH: i64 = 192;
    const DEPTH: usize = 12;
    const HEADS: i64 = 3;
    const CLASSES: i64 = 1000;
    let shape = shape.map_or_else(|| vec![3, 224, 224], <[i64]>::to_vec);
    check_shape(&shape, "vit-tiny (channels x height x width)", 3..=3)?;
    if shape[1] % PATCH != 0 || shape[2] % PATCH != 0 {
        return Err(TorchError::bad(
            ErrorCode::BadShape,
            format!("vit-tiny needs height and width divisible by its patch size {PATCH}, e.g. 3x224x224; got {}", super::fmt_shape(&shape)),
        ));
    }
    let tokens = (shape[1] / PATCH) * (shape[2] / PATCH) + 1;
    let cfg = nn::ConvConfig {
        stride: PATCH,
        ..Default::default()
    };
    let init = nn::Init::Randn {
        mean: 0.0,
        stdev: 0.02,
    };
    let model = Vit {
        patch: nn::conv2d(root / "patch", shape[0], WIDTH, PATCH, cfg),
        cls: root.var("cls", &[1, 1, WIDTH], init),
        pos: root.var("pos", &[1, tokens, WIDTH], init),
        blocks: blocks(&(root / "blocks"), DEPTH, WIDTH, HEADS),
        ln: nn::layer_norm(root / "ln", vec![WIDTH], Default::default()),
        head: nn::linear(root / "head", WIDTH, CLASSES, Default::default()),
        flops: (0.0, 0.0, 0.0),
    };
    #[allow(clippy::cast_precision_loss)]
    let patch_flops = 2.0 * ((tokens - 1) * WIDTH * shape[0] * PATCH * PATCH) as f64;
    #[allow(clippy::cast_precision_loss)]
    let head_flops = 2.0 * (WIDTH * CLASSES) as f64;
    let flops = patch_flops + block_flops(DEPTH, WIDTH, tokens) + head_flops;
    let model = Vit {
        flops: (patch_flops, block_flops(1, WIDTH, tokens), head_flops),
        ..model
    };
    Ok((
        Box::new(model),
        shape,
        InputKind::Float,
        TargetKind::Class { classes: CLASSES },
        Some(flops),
    ))
}

struct Gpt {
    tok: nn::Embedding,
    pos: Tensor,
    blocks: Vec<Block>,
    ln: nn::LayerNorm,
    head: nn::Linear,
    /// Per-sample FLOPs of one block and of the head, at the built sequence length.
    flops: (f64, f64),
}

impl Gpt {
    fn embed(&self, x: &Tensor) -> Result<Tensor, TorchError> {
        let t = x.size()[1];
        Ok(x.apply(&self.tok) + self.pos.f_narrow(1, 0, t)?)
    }
}

impl Model for Gpt {
    fn forward(&self, x: &Tensor, _train: bool) -> Result<Tensor, TorchError> {
        let mut h = self.embed(x)?;
        for blk in &self.blocks {
            h = blk.forward(&h, true)?;
        }
        Ok(self.ln.forward(&h).apply(&self.head))
    }

    fn layers(&self) -> Vec<Layer<'_>> {
        let (block, head) = self.flops;
        let mut v = vec![Layer {
            name: "embed".into(),
            flops_per_sample: Some(0.0),
            forward: Box::new(|x| self.embed(x)),
        }];
        v.extend(self.blocks.iter().enumerate().map(|(i, b)| Layer {
            name: format!("block{i}"),
            flops_per_sample: Some(block),
            forward: Box::new(move |h| b.forward(h, true)),
        }));
        v.push(Layer {
            name: "head".into(),
            flops_per_sample: Some(head),
            forward: Box::new(|h| Ok(self.ln.forward(h).apply(&self.head))),
        });
        v
    }
}

pub(super) fn build_gpt(root: &nn::Path<'_>, shape: Option<&[i64]>) -> Result<Built, TorchError> {
    const VOCAB: i64 = 8192;
    const WIDTH: i64 = 256;
    const DEPTH: usize = 4;
    const HEADS: i64 = 4;
    const MAX_CONTEXT: i64 = 2048;
    let shape = shape.map_or_else(|| vec![256], <[i64]>::to_vec);
    check_shape(&shape, "gpt-tiny (sequence length)", 1..=1)?;
    if shape[0] > MAX_CONTEXT {
        return Err(TorchError::bad(
            ErrorCode::BadShape,
            format!(
                "gpt-tiny takes sequences up to {MAX_CONTEXT} tokens; got {}",
                shape[0]
            ),
        ));
    }
    let init = nn::Init::Randn {
        mean: 0.0,
        stdev: 0.02,
    };
    let model = Gpt {
        tok: nn::embedding(root / "tok", VOCAB, WIDTH, Default::default()),
        pos: root.var("pos", &[1, MAX_CONTEXT, WIDTH], init),
        blocks: blocks(&(root / "blocks"), DEPTH, WIDTH, HEADS),
        ln: nn::layer_norm(root / "ln", vec![WIDTH], Default::default()),
        head: nn::linear(root / "head", WIDTH, VOCAB, Default::default()),
        flops: (0.0, 0.0),
    };
    #[allow(clippy::cast_precision_loss)]
    let head_flops = 2.0 * (shape[0] * WIDTH * VOCAB) as f64;
    let flops = block_flops(DEPTH, WIDTH, shape[0]) + head_flops;
    let model = Gpt {
        flops: (block_flops(1, WIDTH, shape[0]), head_flops),
        ..model
    };
    Ok((
        Box::new(model),
        shape,
        InputKind::Tokens { vocab: VOCAB },
        TargetKind::TokenClass { vocab: VOCAB },
        Some(flops),
    ))
}
