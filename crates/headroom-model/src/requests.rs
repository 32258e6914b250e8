//! What people ask for, as both shells receive it: one input per capability, values as typed
//! (a budget `80%`, a dtype `bf16`), checked and given their defaults here and nowhere else, so
//! `headroom sweep --max-batch 0` and the app's Sweep form with a largest batch of 0 are refused
//! by the same check with the same message. The CLI fills an input from its arguments, the app
//! from its form; each then only shows the result.

use crate::budget::BudgetSpec;
use crate::epochs::EpochThresholds;
use crate::error::Invalid;
use crate::protocol::{
    parse_batches, parse_shape, BatchPlan, Dtype, EpochsRequest, Mode, ProfileRequest, Release,
    SweepRequest,
};

fn invalid(message: impl Into<String>) -> Invalid {
    Invalid(message.into())
}

/// The workloads with an MLX equivalent (`sweep --compare mlx`).
pub const MLX_WORKLOADS: [&str; 5] = ["mlp", "matmul", "cnn", "vit-tiny", "gpt-tiny"];
/// The shape as typed (`3x224x224`); blank is no shape.
fn shape(text: Option<&str>) -> Result<Option<Vec<i64>>, Invalid> {
    text.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse_shape)
        .transpose()
}

/// What runs and where, as every built-in job takes it (`--workload`, `--input-shape`,
/// `--device`, `--dtype`; the app's forms).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadInput {
    /// A built-in workload or the path of a TorchScript file.
    pub workload: String,
    /// One sample's shape without the batch (`3x224x224`), for a TorchScript file.
    pub input_shape: Option<String>,
    /// `auto`, `cpu`, `mps`, `cuda` or `cuda:N`.
    pub device: String,
    /// `f32`, `f16` or `bf16`.
    pub dtype: String,
}

impl Default for WorkloadInput {
    fn default() -> Self {
        Self {
            workload: "mlp".into(),
            input_shape: None,
            device: "auto".into(),
            dtype: "f32".into(),
        }
    }
}

/// A [`WorkloadInput`] checked: the values a worker request carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub workload: String,
    pub input_shape: Option<Vec<i64>>,
    pub device: String,
    pub dtype: Dtype,
}

impl WorkloadInput {
    /// Checks the workload (not blank), the shape and the dtype.
    pub fn check(&self) -> Result<Workload, Invalid> {
        let workload = self.workload.trim();
        if workload.is_empty() {
            return Err(invalid("pick a workload or a TorchScript file"));
        }
        Ok(Workload {
            workload: workload.to_owned(),
            input_shape: shape(self.input_shape.as_deref())?,
            device: self.device.trim().to_owned(),
            dtype: Dtype::parse(self.dtype.trim())?,
        })
    }
}

/// A sweep over batch sizes (`headroom sweep`, the app's Sweep panel).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepInput {
    pub what: WorkloadInput,
    /// A size (`12GiB`), a share (`80%`), or `default` (blank is `default`).
    pub budget: String,
    /// `train` or `infer`.
    pub mode: String,
    /// Exactly these batches (`1,2,4,8`), instead of a search.
    pub batches: Option<String>,
    /// The search's largest batch; `None` for the device's default.
    pub max_batch: Option<u32>,
    /// The search's first batch.
    pub start_batch: u32,
    /// Timed steps per point; `None` lets the worker choose.
    pub steps: Option<u32>,
    /// Intra-op CPU threads; `None` keeps libtorch's default.
    pub threads: Option<u32>,
    /// Predict each point's peak and jump to the predicted limit (`false`: every doubling).
    pub predict: bool,
    /// Inputs made on the host and copied every step.
    pub host_inputs: bool,
    /// Then measure the recommended batch on `cpu` or `mlx` too.
    pub compare: Option<String>,
}

impl Default for SweepInput {
    fn default() -> Self {
        Self {
            what: WorkloadInput::default(),
            budget: "default".into(),
            mode: "train".into(),
            batches: None,
            max_batch: None,
            start_batch: 1,
            steps: None,
            threads: None,
            predict: true,
            host_inputs: false,
            compare: None,
        }
    }
}

impl SweepInput {
    /// Checks every value and turns the input into the worker's request.
    pub fn request(&self) -> Result<SweepRequest, Invalid> {
        let what = self.what.check()?;
        let plan = match (&self.batches, self.max_batch) {
            (Some(list), _) => BatchPlan::Explicit {
                batches: parse_batches(list)?,
            },
            (None, Some(0)) => {
                return Err(invalid(
                    "--max-batch 0 cannot run anything: the largest batch must be 1 or more",
                ))
            }
            (None, max) => {
                if self.start_batch == 0 {
                    return Err(invalid("--start-batch 0 cannot run; batches start at 1"));
                }
                BatchPlan::Search {
                    start: self.start_batch,
                    max: max.unwrap_or(0),
                }
            }
        };
        if self.steps == Some(0) {
            return Err(invalid("--steps 0 would time nothing; give 1 or more"));
        }
        if self.threads == Some(0) {
            return Err(invalid("--threads 0 cannot run; give 1 or more"));
        }
        self.check_compare(&what)?;
        let budget = self.budget.trim();
        Ok(SweepRequest {
            device: what.device,
            workload: what.workload,
            input_shape: what.input_shape,
            dtype: what.dtype,
            mode: Mode::parse(self.mode.trim())?,
            plan,
            budget: BudgetSpec::parse(if budget.is_empty() { "default" } else { budget })?,
            steps: self.steps,
            threads: self.threads,
            predict: self.predict,
            host_inputs: self.host_inputs,
            prior: Vec::new(),
        })
    }

    fn check_compare(&self, what: &Workload) -> Result<(), Invalid> {
        match self.compare.as_deref() {
            None | Some("") => Ok(()),
            Some("cpu") if what.device == "cpu" => Err(invalid(
                "--compare cpu needs another device to compare with (--device mps, cuda or auto)",
            )),
            Some("cpu") => Ok(()),
            Some("mlx") => {
                if !MLX_WORKLOADS.contains(&what.workload.as_str()) {
                    return Err(invalid(format!(
                        "--compare mlx runs the same workload through MLX, which Headroom has for {} only; \
                         use one of them with --workload",
                        MLX_WORKLOADS.join(", ")
                    )));
                }
                if what.input_shape.is_some() || what.dtype != Dtype::F32 {
                    return Err(invalid(
                        "--compare mlx compares the default input shape in f32; drop --input-shape and --dtype",
                    ));
                }
                Ok(())
            }
            Some(other) => Err(invalid(format!(
                "--compare {other:?}: the baseline is `cpu` or `mlx`"
            ))),
        }
    }
}

/// One batch profiled layer by layer (`headroom profile`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileInput {
    pub what: WorkloadInput,
    pub batch: u32,
    /// Passes per layer; the median is kept.
    pub reps: u32,
    pub threads: Option<u32>,
}

impl ProfileInput {
    /// Checks every value and turns the input into the worker's request.
    pub fn request(&self) -> Result<ProfileRequest, Invalid> {
        let what = self.what.check()?;
        if self.batch == 0 || self.reps == 0 {
            return Err(invalid("--batch and --reps must be 1 or more"));
        }
        Ok(ProfileRequest {
            device: what.device,
            workload: what.workload,
            input_shape: what.input_shape,
            dtype: what.dtype,
            batch: self.batch,
            reps: self.reps,
            threads: self.threads,
        })
    }
}

/// A built-in model or a TorchScript file against a CPU copy in f32 (`headroom numerics
/// --workload`): the workload's dtype is the compared side's.
#[derive(Debug, Clone, PartialEq)]
pub struct NumericsInput {
    pub what: WorkloadInput,
    pub batch: u32,
    pub tolerance: f64,
    pub threads: Option<u32>,
    /// A layer the compared side scales by 1.04 (the tests' wrong layer).
    pub perturb: Option<String>,
    /// The f32 reference on the same device instead of the CPU.
    pub reference_on_device: bool,
}

impl NumericsInput {
    /// Checks every value and turns the input into the worker's request.
    pub fn request(&self) -> Result<crate::protocol::NumericsRequest, Invalid> {
        let what = self.what.check()?;
        if self.batch == 0 {
            return Err(invalid("--batch must be 1 or more"));
        }
        if !(self.tolerance > 0.0 && self.tolerance.is_finite()) {
            return Err(invalid(format!(
                "--tolerance {} is not a positive number (relative error, e.g. 1e-3)",
                self.tolerance
            )));
        }
        Ok(crate::protocol::NumericsRequest {
            device: what.device,
            workload: what.workload,
            input_shape: what.input_shape,
            dtype: what.dtype,
            batch: self.batch,
            tolerance: self.tolerance,
            threads: self.threads,
            perturb: self.perturb.clone(),
            reference_on_device: self.reference_on_device,
        })
    }
}

/// Memory across epochs of one batch (`headroom epochs`, the app's Memory panel). Its leak
/// threshold and window default to the configuration's `[epochs]`.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochsInput {
    pub what: WorkloadInput,
    pub batch: u32,
    pub epochs: u32,
    pub steps_per_epoch: u32,
    /// `none`, `gc`, `empty-cache` or `both`.
    pub release: String,
    /// MiB of device tensors retained every epoch (a real leak, to see the detector work).
    pub leak_mib: u32,
    pub threads: Option<u32>,
    /// Growth that makes a leak suspect, in percent; `None`: the configuration's.
    pub leak_threshold_pct: Option<f64>,
    /// Over how many epochs; `None`: the configuration's.
    pub leak_over: Option<u32>,
}

impl Default for EpochsInput {
    fn default() -> Self {
        Self {
            what: WorkloadInput::default(),
            batch: 32,
            epochs: 10,
            steps_per_epoch: 20,
            release: "none".into(),
            leak_mib: 0,
            threads: None,
            leak_threshold_pct: None,
            leak_over: None,
        }
    }
}

impl EpochsInput {
    /// Checks every value and gives the worker's request and the thresholds its verdict uses
    /// (`config` is the configuration's `[epochs]`).
    pub fn request(
        &self,
        config: &EpochThresholds,
    ) -> Result<(EpochsRequest, EpochThresholds), Invalid> {
        let what = self.what.check()?;
        let thresholds = leak_thresholds(self.leak_threshold_pct, self.leak_over, config)?;
        let req = EpochsRequest {
            device: what.device,
            workload: what.workload,
            input_shape: what.input_shape,
            dtype: what.dtype,
            batch: self.batch,
            epochs: self.epochs,
            steps_per_epoch: self.steps_per_epoch,
            release: Release::parse(self.release.trim())?,
            leak_mib: self.leak_mib,
            threads: self.threads,
        };
        req.check()?;
        Ok((req, thresholds))
    }
}

/// The leak thresholds of an epochs run or a watched command: `pct` percent over `over` epochs
/// where given, else the configuration's `[epochs]` (whose own defaults are +26 % over 10).
pub fn leak_thresholds(
    pct: Option<f64>,
    over: Option<u32>,
    config: &EpochThresholds,
) -> Result<EpochThresholds, Invalid> {
    if pct.is_some_and(|p| !(p > 0.0 && p.is_finite())) || over == Some(0) {
        return Err(invalid(
            "--leak-threshold must be a positive percentage and --leak-over 1 or more",
        ));
    }
    Ok(EpochThresholds {
        leak_growth: pct.map_or(config.leak_growth, |p| p / 100.0),
        over_epochs: over.unwrap_or(config.over_epochs),
        ..*config
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_input_becomes_the_workers_request() {
        let r = SweepInput {
            what: WorkloadInput {
                workload: " mlp ".into(),
                ..WorkloadInput::default()
            },
            budget: "".into(),
            max_batch: Some(64),
            ..SweepInput::default()
        }
        .request()
        .expect("valid");
        assert_eq!(r.workload, "mlp");
        assert_eq!(r.plan, BatchPlan::Search { start: 1, max: 64 });
        assert_eq!(r.budget, BudgetSpec::parse("default").expect("default"));
        let explicit = SweepInput {
            batches: Some("4,1,2".into()),
            max_batch: Some(0),
            ..SweepInput::default()
        }
        .request()
        .expect("a list wins over --max-batch");
        assert_eq!(
            explicit.plan,
            BatchPlan::Explicit {
                batches: vec![1, 2, 4]
            }
        );
    }

    #[test]
    fn each_bad_sweep_value_is_named() {
        let bad = |i: SweepInput| i.request().expect_err("refused").to_string();
        let base = SweepInput::default;
        let with = |workload: &str, device: &str| WorkloadInput {
            workload: workload.into(),
            device: device.into(),
            ..WorkloadInput::default()
        };
        assert!(bad(SweepInput {
            what: with(" ", "auto"),
            ..base()
        })
        .contains("pick a workload"));
        assert!(bad(SweepInput {
            max_batch: Some(0),
            ..base()
        })
        .contains("--max-batch 0"));
        assert!(bad(SweepInput {
            start_batch: 0,
            ..base()
        })
        .contains("--start-batch 0"));
        assert!(bad(SweepInput {
            steps: Some(0),
            ..base()
        })
        .contains("--steps 0"));
        assert!(bad(SweepInput {
            threads: Some(0),
            ..base()
        })
        .contains("--threads 0"));
        let cpu_vs_cpu = SweepInput {
            what: with("mlp", "cpu"),
            compare: Some("cpu".into()),
            ..base()
        };
        assert!(bad(cpu_vs_cpu).contains("needs another device"));
        let mlx_copy = SweepInput {
            what: with("copy", "auto"),
            compare: Some("mlx".into()),
            ..base()
        };
        assert!(bad(mlx_copy)
            .contains("which Headroom has for mlp, matmul, cnn, vit-tiny, gpt-tiny only"));
        assert!(bad(SweepInput {
            compare: Some("tpu".into()),
            ..base()
        })
        .contains("`cpu` or `mlx`"));
    }

    #[test]
    fn epochs_thresholds_come_from_the_config_unless_given() {
        let config = EpochThresholds {
            leak_growth: 0.4,
            over_epochs: 5,
            ..EpochThresholds::default()
        };
        let (req, t) = EpochsInput::default().request(&config).expect("valid");
        assert_eq!((t.leak_growth, t.over_epochs), (0.4, 5));
        assert_eq!((req.batch, req.epochs, req.steps_per_epoch), (32, 10, 20));
        let (_, t) = EpochsInput {
            leak_threshold_pct: Some(10.0),
            leak_over: Some(3),
            ..EpochsInput::default()
        }
        .request(&config)
        .expect("valid");
        assert_eq!((t.leak_growth, t.over_epochs), (0.1, 3));
        for (pct, over) in [(Some(0.0), None), (Some(f64::NAN), None), (None, Some(0))] {
            let e = leak_thresholds(pct, over, &config).expect_err("refused");
            assert!(e.to_string().contains("--leak-threshold"), "{e}");
        }
        let e = EpochsInput {
            batch: 0,
            ..EpochsInput::default()
        }
        .request(&config)
        .expect_err("batch 0");
        assert!(e.to_string().contains("must all be 1 or more"), "{e}");
    }
}
