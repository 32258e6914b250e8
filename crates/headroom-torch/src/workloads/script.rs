//! A user's TorchScript module (`torch.jit.script(model).save("model.pt")`), trained with a
//! mean-square loss on its output so any output shape works.

use headroom_model::error::ErrorCode;
use std::path::Path;

use tch::{nn, Tensor, TrainableCModule};

use super::{check_shape, InputKind, Model, TargetKind, Workload};
use crate::TorchError;

struct Script {
    module: TrainableCModule,
}

impl Model for Script {
    fn forward(&self, x: &Tensor, _train: bool) -> Result<Tensor, TorchError> {
        self.module.forward_ts(&[x]).map_err(|e| {
            TorchError::bad(
                ErrorCode::BadShape,
                format!(
                    "the model's forward failed on an input of shape {:?}: {}; check --input-shape \
                     (one sample, without the batch) and that forward takes one tensor and returns one tensor",
                    x.size(),
                    first_line(&e.to_string())
                ),
            )
        })
    }

    fn set_eval(&mut self) -> Result<(), TorchError> {
        Ok(self.module.f_set_eval()?)
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

pub(super) fn build(
    path: &Path,
    shape: Option<&[i64]>,
    vs: &mut nn::VarStore,
) -> Result<Workload, TorchError> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        TorchError::bad(
            ErrorCode::BadModel,
            format!("cannot read model file {shown}: {e}; give the path of a TorchScript .pt file"),
        )
    })?;
    if !meta.is_file() {
        return Err(TorchError::bad(
            ErrorCode::BadModel,
            format!("{shown} is not a file; give the path of a TorchScript .pt file"),
        ));
    }
    let Some(shape) = shape else {
        return Err(TorchError::bad(
            ErrorCode::BadShape,
            format!("a TorchScript model needs --input-shape (one sample, without the batch), e.g. --input-shape 3x224x224 for {shown}"),
        ));
    };
    check_shape(shape, "a TorchScript model", 1..=6)?;
    let mut module = TrainableCModule::load(path, vs.root()).map_err(|e| {
        TorchError::bad(
            ErrorCode::BadModel,
            format!(
                "{shown} is not a TorchScript module libtorch can load ({}); export it with \
                 torch.jit.script(model).save(path) or torch.jit.trace(model, example).save(path) — \
                 a state_dict saved with torch.save is not enough",
                first_line(&e.to_string())
            ),
        )
    })?;
    module.f_set_train()?;
    let name = path
        .file_name()
        .map_or_else(|| shown.to_string(), |n| n.to_string_lossy().into_owned());
    Ok(Workload {
        name,
        vs: std::mem::replace(vs, nn::VarStore::new(vs.device())),
        model: Box::new(Script { module }),
        input_shape: shape.to_vec(),
        input: InputKind::Float,
        target: TargetKind::None,
        kind: tch::Kind::Float,
        forward_flops: None,
        backward_factor: 2.0,
        source: Some(path.to_path_buf()),
    })
}
