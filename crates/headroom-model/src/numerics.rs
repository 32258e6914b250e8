//! `headroom numerics`: the user's model on its device (or in a lower dtype) against a CPU copy
//! in f32, layer by layer, as the observer measured it at one training iteration. The observer
//! sends the errors; here they are read: the first layer past the tolerance, the worst gradient,
//! and the verdict in one sentence.

use serde::{Deserialize, Serialize};

use crate::stats::sig3;

/// One compared tensor: a layer's output, the model's output or a parameter's gradient.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compared {
    pub name: String,
    /// The largest absolute difference.
    pub abs: f64,
    /// That difference over the reference's largest magnitude.
    pub rel: f64,
}

/// What the comparison found.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NumericsReport {
    /// Where the compared side ran (`cuda:0`, `mps`, `cpu`) and in what (`f32`, `bf16`, `f16`).
    #[serde(default)]
    pub device: String,
    #[serde(default)]
    pub dtype: String,
    /// The reference (`cpu f32`) and how both ran (`eval (dropout off)`).
    #[serde(default)]
    pub reference: String,
    #[serde(default)]
    pub mode: String,
    #[serde(default)]
    pub tolerance: f64,
    /// Every layer's output, in the order the reference called them.
    #[serde(default)]
    pub layers: Vec<Compared>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Compared>,
    /// The gradients of the outputs' sum, the worst first (at most 20).
    #[serde(default)]
    pub grads: Vec<Compared>,
    #[serde(default)]
    pub seconds: f64,
    /// The operators that fell back to the CPU (PyTorch's MPS fallback warnings) by the end of
    /// the compared pass: the errors of those layers are the CPU's, not the device's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_ops: Vec<String>,
    /// What PyTorch let run in TF32 on the compared CUDA device (`convolutions`, `matrix
    /// multiplications`): there an f32 comparison also measures TF32's rounding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tf32: Vec<String>,
    /// Why there is no comparison (the model could not be copied or run twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A small error as people write it: `8.0e-6` below 0.01, three significant digits above.
pub fn small(x: f64) -> String {
    if x == 0.0 {
        "0".to_owned()
    } else if x.abs() < 0.01 {
        format!("{x:.1e}")
    } else {
        sig3(x)
    }
}

impl NumericsReport {
    /// The first layer (in call order) whose error passes the tolerance.
    pub fn first_over(&self) -> Option<&Compared> {
        self.layers.iter().find(|l| l.rel > self.tolerance)
    }

    /// The largest relative error over the layers, the output and the gradients.
    pub fn worst(&self) -> Option<&Compared> {
        self.layers
            .iter()
            .chain(&self.output)
            .chain(&self.grads)
            .max_by(|a, b| a.rel.total_cmp(&b.rel))
    }

    /// Whether everything compared is within the tolerance.
    pub fn within(&self) -> bool {
        self.error.is_none() && self.worst().is_none_or(|w| w.rel <= self.tolerance)
    }

    /// The verdict in one sentence, with the figures; the operators that fell back to the CPU
    /// after it.
    pub fn verdict(&self) -> String {
        let mut v = self.comparison();
        if !self.within() && self.error.is_none() && self.dtype == "f32" && !self.tf32.is_empty() {
            let flag = |what: &str| match what {
                "convolutions" => "`torch.backends.cudnn.allow_tf32 = False`",
                _ => "`torch.backends.cuda.matmul.allow_tf32 = False`",
            };
            v.push_str(&format!(
                "; TF32 was on for {} (PyTorch's default on CUDA), which rounds f32 inputs to 10 bits of mantissa: differences near 1e-3 are expected from it — set {} in the script to compare in full f32",
                self.tf32.join(" and "),
                self.tf32.iter().map(|w| flag(w)).collect::<Vec<_>>().join(" and ")
            ));
        }
        if self.error.is_none() && !self.fallback_ops.is_empty() {
            let n = self.fallback_ops.len();
            v.push_str(&format!(
                "; {n} operator{} fell back to the CPU by then ({}): {} computed there",
                if n == 1 { "" } else { "s" },
                self.fallback_ops.join(", "),
                if n == 1 { "it was" } else { "they were" }
            ));
        }
        v
    }

    fn comparison(&self) -> String {
        if let Some(e) = &self.error {
            return format!("numerics: not compared ({e})");
        }
        let side = format!("{} {}", self.device, self.dtype);
        let Some(worst) = self.worst() else {
            return format!(
                "numerics: {side} against {}: nothing to compare (no floating-point output)",
                self.reference
            );
        };
        let pct = |r: f64| format!("{} %", sig3(r * 100.0));
        if self.within() {
            return format!(
                "numerics: {side} agrees with {} within {} everywhere ({} layers, the output and {} gradients; largest {} at `{}`)",
                self.reference,
                small(self.tolerance),
                self.layers.len(),
                self.grads.len(),
                small(worst.rel),
                worst.name
            );
        }
        match self.first_over() {
            Some(first) => format!(
                "numerics: layer `{}` on {side} differs from {} by {} (tolerance {}) — the first of {} layers past it; check before you trust these numbers",
                first.name,
                self.reference,
                pct(first.rel),
                small(self.tolerance),
                self.layers.iter().filter(|l| l.rel > self.tolerance).count()
            ),
            None => format!(
                "numerics: every layer on {side} is within {} of {}, but `{}` differs by {} — check before you trust these numbers",
                small(self.tolerance),
                self.reference,
                worst.name,
                pct(worst.rel)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, rel: f64) -> Compared {
        Compared {
            name: name.into(),
            abs: rel * 2.0,
            rel,
        }
    }

    #[test]
    fn the_first_layer_past_the_tolerance_is_named_and_a_clean_model_passes() {
        let mut r = NumericsReport {
            device: "cuda:0".into(),
            dtype: "f32".into(),
            reference: "cpu f32".into(),
            tolerance: 1e-3,
            layers: vec![c("conv1", 2e-7), c("layer1.0", 4e-2), c("fc", 5e-2)],
            output: Some(c("(output)", 5e-2)),
            grads: vec![c("fc.weight", 3e-2)],
            ..NumericsReport::default()
        };
        assert!(!r.within());
        assert_eq!(r.first_over().map(|l| l.name.as_str()), Some("layer1.0"));
        assert_eq!(
            r.verdict(),
            "numerics: layer `layer1.0` on cuda:0 f32 differs from cpu f32 by 4.00 % (tolerance 1.0e-3) — the first of 2 layers past it; check before you trust these numbers"
        );
        r.layers = vec![c("conv1", 2e-7), c("fc", 3e-6)];
        r.output = Some(c("(output)", 3e-6));
        r.grads = vec![c("fc.weight", 8e-6)];
        assert!(r.within());
        assert_eq!(
            r.verdict(),
            "numerics: cuda:0 f32 agrees with cpu f32 within 1.0e-3 everywhere (2 layers, the output and 1 gradients; largest 8.0e-6 at `fc.weight`)"
        );
        // Within the tolerance, TF32 needs no word; past it in f32 on CUDA, it is named.
        r.tf32 = vec!["convolutions".into()];
        assert!(!r.verdict().contains("TF32"));
        r.layers.push(c("layer2.0.conv2", 1.02e-3));
        assert!(
            r.verdict().ends_with("; TF32 was on for convolutions (PyTorch's default on CUDA), which rounds f32 inputs to 10 bits of mantissa: differences near 1e-3 are expected from it — set `torch.backends.cudnn.allow_tf32 = False` in the script to compare in full f32"),
            "{}",
            r.verdict()
        );
        r.dtype = "bf16".into();
        assert!(
            !r.verdict().contains("TF32"),
            "bf16's own difference is not TF32's"
        );
        r.dtype = "f32".into();
        r.error = Some("RuntimeError('no deepcopy')".into());
        assert!(!r.within());
        assert!(r.verdict().starts_with("numerics: not compared ("));
        assert_eq!(
            (small(0.0), small(2.5e-7), small(0.04)),
            ("0".into(), "2.5e-7".into(), "0.0400".into())
        );
    }
}
