//! How busy the accelerator is while a point runs: NVIDIA through `nvidia-smi`'s NVML query in
//! loop mode (one long-lived child per worker), Apple GPUs through the IOAccelerator's
//! "Device Utilization %" that `ioreg` prints without sudo. Parsers are pure; the samplers only
//! start the tools and average what they print.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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

/// Averages utilisation readings from a background tool until dropped.
#[derive(Debug)]
pub struct BusySampler {
    acc: Arc<Mutex<Acc>>,
    stop: Arc<AtomicBool>,
    child: Option<Child>,
}

impl BusySampler {
    /// A sampler for torch device `device` (`cuda:0`, `mps`), or `None` where nothing can be
    /// sampled (the CPU, no `nvidia-smi`, another OS).
    pub fn for_device(device: &str) -> Option<Self> {
        if device.starts_with("cuda") {
            let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
            let index = nvidia_index(device, visible.as_deref())?;
            return Self::nvidia(Some(index));
        }
        #[cfg(target_os = "macos")]
        if device == "mps" {
            return Some(Self::ioreg());
        }
        None
    }

    /// A sampler for whatever GPU this machine has, for a process Headroom does not place:
    /// the Apple GPU on macOS, every NVIDIA GPU (averaged) where `nvidia-smi` runs.
    pub fn system() -> Option<Self> {
        #[cfg(target_os = "macos")]
        {
            Some(Self::ioreg())
        }
        #[cfg(not(target_os = "macos"))]
        {
            Self::nvidia(None)
        }
    }

    fn empty(child: Option<Child>) -> Self {
        Self {
            acc: Arc::new(Mutex::new(Acc::default())),
            stop: Arc::new(AtomicBool::new(false)),
            child,
        }
    }

    fn add(acc: &Mutex<Acc>, v: f64) {
        if let Ok(mut a) = acc.lock() {
            a.sum += v;
            a.n += 1;
        }
    }

    fn nvidia(index: Option<u32>) -> Option<Self> {
        let mut cmd = Command::new("nvidia-smi");
        cmd.args([
            "--query-gpu=index,utilization.gpu",
            "--format=csv,noheader,nounits",
            "-lms",
            "200",
        ]);
        if let Some(i) = index {
            cmd.args(["-i", &i.to_string()]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let out = child.stdout.take()?;
        let s = Self::empty(Some(child));
        let acc = Arc::clone(&s.acc);
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some((_, v)) = parse_nvidia_smi_utilization(&line) {
                    Self::add(&acc, v);
                }
            }
        });
        Some(s)
    }

    #[cfg(target_os = "macos")]
    fn ioreg() -> Self {
        let s = Self::empty(None);
        let (acc, stop) = (Arc::clone(&s.acc), Arc::clone(&s.stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let text = crate::child::tool_stdout(
                    "/usr/sbin/ioreg",
                    &["-r", "-d", "1", "-w", "0", "-c", "IOAccelerator"],
                );
                if let Some(v) = text.as_deref().and_then(parse_ioreg_device_utilization) {
                    Self::add(&acc, v);
                }
                if let Some(pid) = text.as_deref().and_then(parse_agc_last_submission_pid) {
                    if let Ok(mut a) = acc.lock() {
                        a.submitters.push(pid);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
        });
        s
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
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The pid that last submitted work to the Apple GPU, from `ioreg -r -d 1 -w 0 -c
/// IOAccelerator`'s `"AGCInfo" = {"fLastSubmissionPID"=390,…}`.
pub fn parse_agc_last_submission_pid(text: &str) -> Option<u32> {
    ioreg_number(text, "fLastSubmissionPID")
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 0)
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
    fn the_cpu_has_no_sampler() {
        assert!(BusySampler::for_device("cpu").is_none());
    }
}
