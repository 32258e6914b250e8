//! How busy the accelerator is while a point runs, read on a thread of its own every
//! [`INTERVAL`]: NVIDIA GPUs through NVML (`nvml-wrapper`: the utilisation NVML keeps per
//! device), Apple GPUs through the IOAccelerator's registry properties ("Device Utilization %"
//! and the last submitter's pid, the figures `ioreg` prints), read with IOKit's registry calls,
//! no process started. The arithmetic is pure; the readers are a thin layer. The `ioreg` and
//! `nvidia-smi` text parsers stay for the captured fixtures and the fuzzing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the sampler reads.
pub const INTERVAL: Duration = Duration::from_millis(200);

/// One line of `nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits`:
/// `0, 37` → (GPU 0, 0.37).
pub fn parse_nvidia_smi_utilization(line: &str) -> Option<(u32, f64)> {
    let (index, util) = line.split_once(',')?;
    let pct: f64 = util.trim().parse().ok()?;
    (0.0..=100.0)
        .contains(&pct)
        .then_some((index.trim().parse().ok()?, pct / 100.0))
}

/// The whole number after the first `"KEY"=` in `ioreg` output (`"Device Utilization %"=2`).
pub fn ioreg_number(text: &str, key: &str) -> Option<u64> {
    let quoted = format!("\"{key}\"=");
    let at = text.find(&quoted)? + quoted.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The first `"Device Utilization %"=N` in `ioreg -r -d 1 -w 0 -c IOAccelerator` output, as a
/// share (0–1).
pub fn parse_ioreg_device_utilization(text: &str) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    let pct = ioreg_number(text, "Device Utilization %")? as f64;
    (pct <= 100.0).then_some(pct / 100.0)
}

/// The physical NVIDIA index of torch's `cuda:N`, through `CUDA_VISIBLE_DEVICES` when it lists
/// plain indices.
pub fn nvidia_index(device: &str, visible: Option<&str>) -> Option<u32> {
    let n: usize = match device.strip_prefix("cuda") {
        Some("") => 0,
        Some(rest) => rest.strip_prefix(':')?.parse().ok()?,
        None => return None,
    };
    match visible.map(str::trim).filter(|v| !v.is_empty()) {
        Some(list) => list.split(',').nth(n)?.trim().parse().ok(),
        None => u32::try_from(n).ok(),
    }
}

#[derive(Debug, Default)]
struct Acc {
    sum: f64,
    n: u32,
    /// The Apple GPU's last submitter at each reading.
    submitters: Vec<u32>,
}

/// The mean share of several GPUs' utilisation percentages (NVML's 0–100), `None` when none
/// was read or one is out of range.
pub fn mean_share(percents: &[u32]) -> Option<f64> {
    if percents.is_empty() || percents.iter().any(|p| *p > 100) {
        return None;
    }
    let sum: u32 = percents.iter().sum();
    #[allow(clippy::cast_precision_loss)]
    Some(f64::from(sum) / 100.0 / percents.len() as f64)
}

/// What one reading of the Apple GPU's registry entry gave.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AcceleratorReading {
    /// "Device Utilization %" (0–100).
    pub utilization_pct: Option<i64>,
    /// `AGCInfo`'s `fLastSubmissionPID`.
    pub last_submitter: Option<i64>,
}

impl AcceleratorReading {
    /// The same figures from `ioreg -r -d 1 -w 0 -c IOAccelerator`'s text (the captured
    /// fixtures the registry reader is checked against).
    pub fn from_ioreg_text(text: &str) -> Self {
        let number = |key| ioreg_number(text, key).and_then(|n| i64::try_from(n).ok());
        Self {
            utilization_pct: number("Device Utilization %"),
            last_submitter: number("fLastSubmissionPID"),
        }
    }

    /// The utilisation as a share (0–1), where it is in range.
    pub fn share(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)]
        self.utilization_pct
            .filter(|p| (0..=100).contains(p))
            .map(|p| p as f64 / 100.0)
    }

    /// The last submitter, where it names a process.
    pub fn submitter(&self) -> Option<u32> {
        self.last_submitter
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0)
    }
}

/// Averages utilisation readings from a background thread until dropped.
#[derive(Debug)]
pub struct BusySampler {
    acc: Arc<Mutex<Acc>>,
    stop: Arc<AtomicBool>,
}

/// NVML device handles moved to the sampler's thread with the `Nvml` they came from.
#[cfg(not(target_os = "macos"))]
struct Handles(Vec<nvml_wrapper_sys::bindings::nvmlDevice_t>);

#[cfg(not(target_os = "macos"))]
impl Handles {
    /// The handles (a method, so that a closure takes the whole, `Send`, value).
    fn all(&self) -> &[nvml_wrapper_sys::bindings::nvmlDevice_t] {
        &self.0
    }
}

// SAFETY: NVML's calls are thread-safe, and a device handle is an opaque reference into the
// library's state that any thread may pass to them; they move together with their `Nvml`.
#[cfg(not(target_os = "macos"))]
unsafe impl Send for Handles {}

impl BusySampler {
    /// A sampler for torch device `device` (`cuda:0`, `mps`), or `None` where nothing can be
    /// sampled (the CPU, no NVML, another OS).
    pub fn for_device(device: &str) -> Option<Self> {
        if device.starts_with("cuda") {
            let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
            let index = nvidia_index(device, visible.as_deref())?;
            return Self::nvidia(Some(index));
        }
        #[cfg(target_os = "macos")]
        if device == "mps" {
            return Some(Self::apple());
        }
        None
    }

    /// A sampler for whatever GPU this machine has, for a process Headroom does not place:
    /// the Apple GPU on macOS, every NVIDIA GPU (averaged) where NVML loads.
    pub fn system() -> Option<Self> {
        #[cfg(target_os = "macos")]
        {
            Some(Self::apple())
        }
        #[cfg(not(target_os = "macos"))]
        {
            Self::nvidia(None)
        }
    }

    fn empty() -> Self {
        Self {
            acc: Arc::new(Mutex::new(Acc::default())),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    fn add(acc: &Mutex<Acc>, v: f64) {
        if let Ok(mut a) = acc.lock() {
            a.sum += v;
            a.n += 1;
        }
    }

    /// Reads with `read` every [`INTERVAL`] on a thread of its own until dropped; `read` adds
    /// what it got.
    fn every_interval(self, mut read: impl FnMut(&Mutex<Acc>) + Send + 'static) -> Self {
        let (acc, stop) = (Arc::clone(&self.acc), Arc::clone(&self.stop));
        let spawned = std::thread::Builder::new()
            .name("headroom-gpu-busy".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    read(&acc);
                    std::thread::sleep(INTERVAL);
                }
            });
        if spawned.is_err() {
            self.stop.store(true, Ordering::SeqCst);
        }
        self
    }

    #[cfg(not(target_os = "macos"))]
    fn nvidia(index: Option<u32>) -> Option<Self> {
        let nvml = nvml_wrapper::Nvml::init().ok()?;
        let count = nvml.device_count().ok()?;
        let indices: Vec<u32> = match index {
            Some(i) if i < count => vec![i],
            Some(_) => return None,
            None => (0..count).collect(),
        };
        if indices.is_empty() {
            return None;
        }
        // The devices' handles, asked for once: `nvmlDeviceGetHandleByIndex` took 6 ms on the
        // H100 here, six times the utilisation call itself, and this reads every 0.2 s.
        let handles = Handles(
            indices
                .iter()
                .filter_map(|i| nvml.device_by_index(*i).ok())
                // SAFETY: raw handles of devices of `nvml`, kept beside it and used only with it.
                .map(|d| unsafe { d.handle() })
                .collect(),
        );
        if handles.0.len() != indices.len() {
            return None;
        }
        Some(Self::empty().every_interval(move |acc| {
            let read: Vec<u32> = handles
                .all()
                .iter()
                // SAFETY: each handle came from `nvml`, which this closure owns beside them.
                .filter_map(|h| {
                    unsafe { nvml_wrapper::Device::new(*h, &nvml) }
                        .utilization_rates()
                        .ok()
                })
                .map(|u| u.gpu)
                .collect();
            if read.len() == handles.all().len() {
                if let Some(v) = mean_share(&read) {
                    Self::add(acc, v);
                }
            }
        }))
    }

    #[cfg(target_os = "macos")]
    #[allow(clippy::unnecessary_wraps)]
    fn nvidia(_index: Option<u32>) -> Option<Self> {
        None
    }

    #[cfg(target_os = "macos")]
    fn apple() -> Self {
        Self::empty().every_interval(|acc| {
            let Some((utilization_pct, last_submitter)) = crate::conditions_macos::accelerator()
            else {
                return;
            };
            let r = AcceleratorReading {
                utilization_pct,
                last_submitter,
            };
            if let Some(v) = r.share() {
                Self::add(acc, v);
            }
            if let Some(pid) = r.submitter() {
                if let Ok(mut a) = acc.lock() {
                    a.submitters.push(pid);
                }
            }
        })
    }

    /// Starts a new averaging window.
    pub fn reset(&self) {
        if let Ok(mut a) = self.acc.lock() {
            *a = Acc::default();
        }
    }

    /// The Apple GPU's last submitter at each reading since the last [`Self::reset`] (empty
    /// elsewhere).
    pub fn submitters(&self) -> Vec<u32> {
        self.acc
            .lock()
            .map(|a| a.submitters.clone())
            .unwrap_or_default()
    }

    /// The mean since the last [`Self::reset`], `None` before any reading.
    pub fn mean(&self) -> Option<f64> {
        let a = self.acc.lock().ok()?;
        (a.n > 0).then(|| a.sum / f64::from(a.n))
    }
}

impl Drop for BusySampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The pid that last submitted work to the Apple GPU, from `ioreg -r -d 1 -w 0 -c
/// IOAccelerator`'s `"AGCInfo" = {"fLastSubmissionPID"=390,…}`.
pub fn parse_agc_last_submission_pid(text: &str) -> Option<u32> {
    ioreg_number(text, "fLastSubmissionPID")
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 0)
}

/// The compute processes on one NVIDIA GPU through NVML, as `nvidia-smi
/// --query-compute-apps=pid,process_name,used_gpu_memory` lists them: (pid, name, bytes). The
/// library is loaded once and asked at the end of each point, with no child process.
pub struct NvidiaApps {
    #[cfg(not(target_os = "macos"))]
    nvml: nvml_wrapper::Nvml,
    #[cfg(not(target_os = "macos"))]
    index: u32,
}

impl std::fmt::Debug for NvidiaApps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvidiaApps").finish_non_exhaustive()
    }
}

impl NvidiaApps {
    /// NVML opened for GPU `index`; `None` where the library is missing (no NVIDIA driver, a
    /// Mac) or has no such GPU.
    #[cfg(not(target_os = "macos"))]
    pub fn open(index: u32) -> Option<Self> {
        let nvml = nvml_wrapper::Nvml::init().ok()?;
        (index < nvml.device_count().ok()?).then_some(Self { nvml, index })
    }

    #[cfg(target_os = "macos")]
    pub fn open(_index: u32) -> Option<Self> {
        None
    }

    /// The processes computing on the GPU now; `None` when NVML cannot say (an old driver
    /// without the call: the caller asks `nvidia-smi` instead).
    #[cfg(not(target_os = "macos"))]
    pub fn read(&self) -> Option<Vec<(u32, String, Option<u64>)>> {
        use nvml_wrapper::enums::device::UsedGpuMemory;
        let procs = self
            .nvml
            .device_by_index(self.index)
            .ok()?
            .running_compute_processes()
            .ok()?;
        Some(
            procs
                .into_iter()
                .map(|p| {
                    // Its name as the driver knows it; empty inside a container whose pids the
                    // driver does not see (the caller names it from this machine's table).
                    let name = self.nvml.sys_process_name(p.pid, 256).unwrap_or_default();
                    let bytes = match p.used_gpu_memory {
                        UsedGpuMemory::Used(b) => Some(b),
                        UsedGpuMemory::Unavailable => None,
                    };
                    (p.pid, name, bytes)
                })
                .collect(),
        )
    }

    #[cfg(target_os = "macos")]
    #[allow(clippy::unused_self)]
    pub fn read(&self) -> Option<Vec<(u32, String, Option<u64>)>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioreg_utilisation_from_a_real_m1_pro() {
        let text = include_str!(
            "../../headroom-core/tests/fixtures/macos/ioreg_IOAccelerator_m1pro_monterey.txt"
        );
        assert_eq!(parse_ioreg_device_utilization(text), Some(0.02));
        // The keys the registry reader looks up, in a real M1 Pro's registry.
        let r = AcceleratorReading::from_ioreg_text(text);
        assert_eq!((r.share(), r.submitter()), (Some(0.02), Some(390)));
        assert_eq!(
            parse_ioreg_device_utilization("\"Renderer Utilization %\"=5"),
            None
        );
    }

    #[test]
    fn a_real_nvidia_smi_loop_on_an_h200() {
        let text = include_str!(
            "../../headroom-core/tests/fixtures/nvidia/nvidia_smi_utilization_loop_h200.txt"
        );
        let readings: Vec<(u32, f64)> = text
            .lines()
            .skip(1)
            .map(|l| parse_nvidia_smi_utilization(l).unwrap_or_else(|| panic!("{l:?}")))
            .collect();
        assert_eq!(readings.len(), 60);
        assert!(readings
            .iter()
            .all(|(i, v)| *i == 0 && (0.0..=1.0).contains(v)));
        assert!(
            readings.iter().any(|(_, v)| *v > 0.1),
            "the sweep kept it busy"
        );
    }

    #[test]
    fn nvidia_smi_lines_and_indices() {
        assert_eq!(parse_nvidia_smi_utilization("0, 37"), Some((0, 0.37)));
        assert_eq!(parse_nvidia_smi_utilization("3, 100"), Some((3, 1.0)));
        assert_eq!(parse_nvidia_smi_utilization("0, [N/A]"), None);
        assert_eq!(parse_nvidia_smi_utilization("0, 180"), None);
        assert_eq!(nvidia_index("cuda", None), Some(0));
        assert_eq!(nvidia_index("cuda:1", None), Some(1));
        assert_eq!(nvidia_index("cuda:1", Some("4,6")), Some(6));
        assert_eq!(nvidia_index("cuda:2", Some("4,6")), None);
        assert_eq!(nvidia_index("mps", None), None);
    }

    #[test]
    fn percentages_of_several_gpus_are_averaged_as_a_share() {
        assert_eq!(mean_share(&[37]), Some(0.37));
        assert_eq!(mean_share(&[100, 50]), Some(0.75));
        assert_eq!(mean_share(&[]), None);
        assert_eq!(mean_share(&[40, 180]), None, "out of range: not a reading");
        let r = AcceleratorReading {
            utilization_pct: Some(2),
            last_submitter: Some(390),
        };
        assert_eq!((r.share(), r.submitter()), (Some(0.02), Some(390)));
        let odd = AcceleratorReading {
            utilization_pct: Some(250),
            last_submitter: Some(0),
        };
        assert_eq!((odd.share(), odd.submitter()), (None, None));
    }

    #[test]
    fn no_nvml_here_means_no_sampler_and_no_process_started() {
        // This machine has no NVIDIA driver: NVML does not load, and nothing is spawned in its
        // place (the sampler used to start `nvidia-smi`).
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            return;
        }
        assert!(BusySampler::for_device("cuda:0").is_none());
        assert!(BusySampler::system().is_none());
    }

    #[test]
    fn the_cpu_has_no_sampler() {
        assert!(BusySampler::for_device("cpu").is_none());
    }
}
