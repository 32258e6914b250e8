//! MLX side by side: the same workload (Headroom's built-in `mlp`, `cnn`, `vit-tiny` or `gpt-tiny`
//! training step, written with `mlx.nn`, or its `matmul`), at the same input shape, batch and dtype, through a Python's MLX, next to Headroom's own figure for that batch
//! (MPS on a Mac, the CPU or CUDA elsewhere). `sweep --compare mlx` runs it at the recommended
//! batch; the comparison is recorded as an `mlx-compare` run and feeds the MLX column of
//! `decide`. On Linux, `pip install "mlx[cpu]"` makes the MLX side run on the CPU.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::child::{run_captured, Captured};
use crate::ledger::{Ledger, NewRun, RunStatus};
use crate::protocol::{Point, PointStatus};
use crate::readiness::python::{discover, probe_all, DiscoveryEnv};
use crate::CoreError;

/// The script MLX runs (argv: workload, batch, warm-up steps, timed steps; one JSON line out).
pub const SCRIPT: &str = include_str!("mlx/bench.py");

pub use crate::requests::MLX_WORKLOADS as WORKLOADS;

/// What the MLX side measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlxResult {
    /// The contract it ran: Headroom's input shape (channels first, as torch has it) and dtype.
    #[serde(default)]
    pub input_shape: Vec<i64>,
    #[serde(default)]
    pub dtype: String,
    pub mlx_version: Option<String>,
    /// MLX's default device, e.g. `Device(gpu, 0)` on a Mac, `Device(cpu, 0)` with `mlx[cpu]`.
    pub device: String,
    pub workload: String,
    pub batch: u32,
    pub steps: u32,
    pub step_ms_p50: f64,
    pub step_ms_p95: f64,
    pub samples_per_s: Option<f64>,
    /// MLX's own peak of allocated memory over the timed steps.
    pub peak_bytes: Option<u64>,
}

/// The last line of `stdout` that is the script's JSON result.
pub fn parse_output(stdout: &str) -> Option<MlxResult> {
    stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<MlxResult>(l.trim()).ok())
}

/// Runs [`SCRIPT`] in `python`: `warmup` untimed steps, then `steps` timed ones.
pub fn run(
    python: &Path,
    workload: &str,
    batch: u32,
    warmup: u32,
    steps: u32,
    timeout: Duration,
) -> Result<MlxResult, CoreError> {
    if !WORKLOADS.contains(&workload) {
        return Err(CoreError::InvalidInput(format!(
            "MLX has no equivalent of the workload {workload:?} here; compare with one of {}",
            WORKLOADS.join(", ")
        )));
    }
    let mut cmd = Command::new(python);
    cmd.arg("-c")
        .arg(SCRIPT)
        .arg(workload)
        .arg(batch.to_string())
        .arg(warmup.to_string())
        .arg(steps.max(1).to_string());
    let (status, out, err) = run_captured(&mut cmd, timeout).map_err(|e| match e {
        Captured::Spawn(e) => CoreError::InvalidInput(format!(
            "cannot start {}: {e}; name a Python with mlx with --mlx-python",
            python.display()
        )),
        Captured::TimedOut => CoreError::Worker(format!(
            "the MLX run of {workload} at batch {batch} did not finish within {} s; try a smaller batch",
            timeout.as_secs()
        )),
    })?;
    if let Some(r) = parse_output(&out).filter(|_| status.success()) {
        return Ok(r);
    }
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim()
        .to_owned();
    Err(if last.contains("No module named 'mlx'") {
        CoreError::InvalidInput(format!(
            "mlx is not installed in {}: `pip install mlx` there (Apple Silicon), or \
             `pip install \"mlx[cpu]\"` (Linux)",
            python.display()
        ))
    } else if crate::failure::classify(&err) == PointStatus::Oom {
        CoreError::Worker(format!(
            "MLX ran out of memory at batch {batch} ({last}); compare at a smaller batch"
        ))
    } else {
        CoreError::Worker(format!(
            "the MLX run failed in {} ({last})",
            python.display()
        ))
    })
}

/// The first Python that doctor's discovery finds with mlx importable (`extra` is probed first).
pub fn find_python(extra: Option<PathBuf>) -> Result<PathBuf, CoreError> {
    let env = DiscoveryEnv::from_process(extra.into_iter().collect());
    let reports = probe_all(&discover(&env), Duration::from_secs(30), 4);
    reports
        .iter()
        .find(|r| r.facts.as_ref().is_some_and(|f| f.mlx.is_some()))
        .map(|r| PathBuf::from(&r.path))
        .ok_or_else(|| {
            CoreError::InvalidInput(format!(
                "no Python with mlx among the {} found: `pip install mlx` (Apple Silicon) or \
                 `pip install \"mlx[cpu]\"` (Linux) in one, or name it with --mlx-python",
                reports.len()
            ))
        })
}

/// Headroom's figure and MLX's for one workload at one batch.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlxComparison {
    pub workload: String,
    pub batch: u32,
    /// The contract both sides ran: the input shape (channels first) and the dtype.
    #[serde(default)]
    pub input_shape: Vec<i64>,
    #[serde(default)]
    pub dtype: String,
    /// Where Headroom's figure was measured (`mps`, `cpu`, `cuda:0`).
    pub torch_device: String,
    pub torch_run_id: Option<i64>,
    pub torch_samples_per_s: f64,
    pub torch_step_ms: f64,
    pub torch_peak_bytes: Option<u64>,
    pub mlx_device: String,
    pub mlx_version: Option<String>,
    pub mlx_samples_per_s: f64,
    pub mlx_step_ms: f64,
    pub mlx_peak_bytes: Option<u64>,
    /// The Python whose MLX ran.
    pub python: String,
    /// MLX's samples/s over Headroom's (above 1: MLX is faster).
    pub ratio: f64,
}

impl MlxComparison {
    /// Pairs a measured point of Headroom's with MLX's result at the same batch; `None` when
    /// either has no throughput.
    pub fn new(
        torch_device: &str,
        torch_run_id: Option<i64>,
        point: &Point,
        mlx: &MlxResult,
        python: &Path,
    ) -> Option<Self> {
        let torch = point
            .samples_per_s
            .filter(|s| *s > 0.0 && point.status == PointStatus::Ok)?;
        let theirs = mlx.samples_per_s.filter(|s| *s > 0.0)?;
        Some(Self {
            workload: mlx.workload.clone(),
            batch: mlx.batch,
            input_shape: mlx.input_shape.clone(),
            dtype: mlx.dtype.clone(),
            torch_device: torch_device.to_owned(),
            torch_run_id,
            torch_samples_per_s: torch,
            torch_step_ms: point.step_ms_p50.unwrap_or(f64::NAN),
            torch_peak_bytes: point.peak_bytes,
            mlx_device: mlx.device.clone(),
            mlx_version: mlx.mlx_version.clone(),
            mlx_samples_per_s: theirs,
            mlx_step_ms: mlx.step_ms_p50,
            mlx_peak_bytes: mlx.peak_bytes,
            python: python.display().to_string(),
            ratio: theirs / torch,
        })
    }

    /// One line with both figures.
    pub fn line(&self) -> String {
        let mem = |b: Option<u64>| b.map_or_else(|| "?".to_owned(), crate::budget::format_bytes);
        let contract = if self.input_shape.is_empty() {
            String::new()
        } else {
            let shape: Vec<String> = self.input_shape.iter().map(i64::to_string).collect();
            format!(" ({}, {})", shape.join("x"), self.dtype)
        };
        format!(
            "{}{contract} at batch {}: MLX ({}) {} samples/s, allocator peak {} vs Headroom on {} \
             {} samples/s, peak {}: MLX {}×",
            self.workload,
            self.batch,
            self.mlx_device,
            crate::stats::sig3(self.mlx_samples_per_s),
            mem(self.mlx_peak_bytes),
            self.torch_device,
            crate::stats::sig3(self.torch_samples_per_s),
            mem(self.torch_peak_bytes),
            crate::stats::sig3(self.ratio)
        )
    }
}

/// Records `c` in the ledger as an `mlx-compare` run.
pub fn record(ledger: &Ledger, c: &MlxComparison) -> Result<i64, CoreError> {
    let id = ledger.begin_run(&NewRun {
        kind: crate::ledger::RunKind::MlxCompare,
        host: crate::machine::hostname(),
        device: c.torch_device.clone(),
        device_name: c.mlx_device.clone(),
        workload: c.workload.clone(),
        dtype: Some(crate::protocol::Dtype::F32),
        mode: None,
        libtorch: c
            .mlx_version
            .as_deref()
            .map_or_else(|| "mlx".into(), |v| format!("mlx {v}")),
        git_commit: None,
        git_dirty: None,
        budget_bytes: None,
        fallback: None,
        request_json: serde_json::to_string(
            &serde_json::json!({ "batch": c.batch, "python": c.python }),
        )?,
        owner_pid: Some(std::process::id()),
    })?;
    ledger.finish_report(
        id,
        RunStatus::Complete,
        &serde_json::to_value(c)?,
        Some(&c.line()),
    )?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_line_is_found_after_other_output() {
        let out = "warming up\n{\"mlx_version\": \"0.32.4\", \"device\": \"Device(cpu, 0)\", \"workload\": \"mlp\", \"batch\": 64, \"steps\": 20, \"step_ms_p50\": 8.0, \"step_ms_p95\": 9.5, \"samples_per_s\": 8000.0, \"peak_bytes\": 52428800}\n";
        let r = parse_output(out).expect("parsed");
        assert_eq!((r.batch, r.steps, r.peak_bytes), (64, 20, Some(50 << 20)));
        assert!(parse_output("Traceback (most recent call last):\n").is_none());
        let mut p = Point::failed(64, PointStatus::Ok, "");
        p.samples_per_s = Some(4000.0);
        p.step_ms_p50 = Some(16.0);
        let c = MlxComparison::new("cpu", Some(3), &p, &r, Path::new("/venv/bin/python"))
            .expect("both measured");
        assert!((c.ratio - 2.0).abs() < 1e-9);
        assert!(c.line().ends_with("MLX 2.00×"), "{}", c.line());
        p.status = PointStatus::Oom;
        assert!(MlxComparison::new("cpu", None, &p, &r, Path::new("p")).is_none());
    }
}
