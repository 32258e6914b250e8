//! `{device}`'s values: a device as the script takes it with the CPU threads to give it
//! (`cpu@2`), parsed from `--devices`, and this machine's default pair and accelerator.

use serde::{Deserialize, Serialize};

use crate::CoreError;

/// One value of `{device}`: a device name as the script takes it, and optionally the CPU
/// threads to give it (`cpu@2`: `OMP_NUM_THREADS=2`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceChoice {
    pub device: String,
    pub threads: Option<u32>,
}

impl DeviceChoice {
    /// Parses `cpu`, `mps`, `cuda:0`, `cpu@2`.
    pub fn parse(text: &str) -> Result<Self, CoreError> {
        let t = text.trim();
        let (device, threads) = match t.split_once('@') {
            Some((d, n)) => {
                let n: u32 = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    CoreError::InvalidInput(format!(
                        "--device-sweep {t:?}: after '@' comes a thread count of 1 or more (cpu@4)"
                    ))
                })?;
                (d.trim(), Some(n))
            }
            None => (t, None),
        };
        // A torch device type, with an index where it has several.
        let (kind, index) = device.split_once(':').unwrap_or((device, ""));
        let ok = matches!(kind, "cpu" | "mps" | "cuda" | "xpu" | "gpu")
            && (index.is_empty()
                || (kind != "cpu" && kind != "mps" && index.parse::<u32>().is_ok()));
        if !ok {
            return Err(CoreError::InvalidInput(format!(
                "--device-sweep {t:?} is not a device: give torch's names as the script takes them (cpu, mps, cuda, cuda:1), e.g. cpu,mps or cpu,cuda"
            )));
        }
        Ok(Self {
            device: device.to_owned(),
            threads,
        })
    }

    /// As written: `cpu`, `cpu@2`.
    pub fn label(&self) -> String {
        match self.threads {
            Some(n) => format!("{}@{n}", self.device),
            None => self.device.clone(),
        }
    }

    pub(super) fn env(&self) -> Vec<(String, String)> {
        self.threads
            .map(|n| vec![("OMP_NUM_THREADS".to_owned(), n.to_string())])
            .unwrap_or_default()
    }
}

/// Parses `cpu,mps`: the first is the baseline (normally the CPU), the last the accelerator swept
/// over the batch.
pub fn parse_devices(text: &str) -> Result<Vec<DeviceChoice>, CoreError> {
    let d: Vec<DeviceChoice> = text
        .split(',')
        .map(DeviceChoice::parse)
        .collect::<Result<_, _>>()?;
    if d.len() != 2 {
        return Err(CoreError::InvalidInput(format!(
            "--device-sweep {text:?}: give two devices, the baseline first (cpu,mps)"
        )));
    }
    Ok(d)
}

/// The CPU and this machine's accelerator, for a comparison nobody named: `cpu,mps` on macOS,
/// `cpu,cuda` where an NVIDIA driver is loaded; none where there is only the CPU.
pub fn default_devices() -> Option<Vec<DeviceChoice>> {
    let accel = if cfg!(target_os = "macos") {
        "mps"
    } else if std::path::Path::new("/proc/driver/nvidia/version").exists() {
        "cuda"
    } else {
        return None;
    };
    Some(
        ["cpu", accel]
            .map(|d| DeviceChoice {
                device: d.to_owned(),
                threads: None,
            })
            .to_vec(),
    )
}

/// The device to fill `{device}` with when nobody named one: this machine's accelerator, else
/// the CPU.
pub fn default_device() -> String {
    default_devices()
        .and_then(|d| d.last().map(|c| c.device.clone()))
        .unwrap_or_else(|| "cpu".into())
}
