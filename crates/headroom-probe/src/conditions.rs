//! The machine's state read through a job ([`ConditionLog`]): thermal state and throttling,
//! power source, Low Power Mode, CPU and GPU power, GPU utilisation and temperature, and an
//! energy counter where the platform has one. From the field's libraries where they exist:
//! NVML through `nvml-wrapper` (an NVIDIA GPU: its energy counter, power, utilisation,
//! temperature and clock slowdowns), `macmon` on Apple Silicon (CPU and GPU power from IOReport's
//! energy counters, GPU residency, temperatures, without sudo), `NSProcessInfo` for the thermal
//! state and Low Power Mode, IOKit's power-source estimate; on Linux the kernel's own files
//! (RAPL's powercap energy counters, CPU thermal-throttle counts, thermal zones, the power
//! supply). The arithmetic over the readings is `headroom_model::conditions`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use headroom_model::conditions::{
    wrapped_rise, ConditionSample, ThermalState, TimedConditions,
};

/// How often a job's conditions are read.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Set (to anything), each reading's and each [`ConditionLog::mark`]'s time is said on stderr
/// (`headroom: conditions …`): for the benchmarks that look for what the readings cost a job.
const TRACE_ENV: &str = "HEADROOM_CONDITIONS_TRACE";

/// Set to `off`, no conditions are read (to measure what reading them costs, or on a machine
/// where a reader misbehaves); set to `coarse`, they are read but the energy counter is never
/// polled ([`ConditionLog::fine`] does nothing: what the polling costs, measured apart).
pub const OFF_ENV: &str = "HEADROOM_CONDITIONS";

/// How often the energy counter is polled while [`ConditionLog::fine`] is on.
const FINE_POLL: Duration = Duration::from_millis(5);

/// [`FINE_POLL`], or the milliseconds `HEADROOM_CONDITIONS_POLL_MS` gives (1–100): a knob for
/// the benchmarks that weigh the polling's cost against its precision.
fn fine_poll() -> Duration {
    std::env::var("HEADROOM_CONDITIONS_POLL_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| (1..=100).contains(ms))
        .map_or(FINE_POLL, Duration::from_millis)
}

/// When the energy counter is next worth polling. NVML's counter moves in fixed periods (every
/// 100 ms on the H100s and H200s here, p5 91 ms, p95 108 ms) and each poll is a call into the
/// driver of 3–6 ms: polled every 5 ms, the sampler was in the driver half the time a point was
/// timed. Once the period is known, the polls wait out [`Cadence::QUIET`] of it after each move
/// and resume, as fine as before, until the next — the same moments to the poll's precision, two
/// or three polls a period instead of nine. A built-in cnn sweep of three short points on the
/// H100 polled 60 times (348 ms in the driver) instead of 83–93 (466–497 ms) when the first
/// point learnt the period from the moves it saw in a row; NVML's counter now starts from its
/// usual period ([`Cadence::NVML_PERIOD`]), so the first point waits too once it has seen one
/// move. A period that was wrong (a seed, or a counter that sped up) shows as moves found by
/// the first poll after a quiet: such a move says nothing of the period, and two in a row
/// forget it, so the counter is polled finely and its period learnt again. A counter that
/// moves at nearly every poll (RAPL's, every millisecond) is polled as it is.
#[derive(Debug)]
struct Cadence {
    /// The polling interval, seconds.
    poll: f64,
    /// The last move seen while polling, in the log's seconds.
    last: Option<f64>,
    /// The latest spacings between moves seen in a row.
    spacings: std::collections::VecDeque<f64>,
    /// A poll since the last move found the counter where it was.
    still_since_move: bool,
    /// Moves in a row found by the first poll after a quiet.
    late: u32,
}

impl Cadence {
    /// The spacings the period is the median of.
    const KEEP: usize = 8;
    /// The share of the period after a move in which no poll is made.
    const QUIET: f64 = 0.8;
    /// NVML's energy counter's period on the GPUs measured (H100, H200), seconds: the period a
    /// counter read from NVML alone starts from.
    #[cfg_attr(target_os = "macos", allow(dead_code))] // no NVML there
    const NVML_PERIOD: f64 = 0.1;

    /// For polls every `poll` seconds, starting from `seed` as the period where one is known.
    fn new(poll: f64, seed: Option<f64>) -> Self {
        let spacings = seed.map(|p| vec![p; 3]).unwrap_or_default().into();
        Self {
            poll,
            last: None,
            spacings,
            still_since_move: false,
            late: 0,
        }
    }

    /// The period the polls wait on, if one is known and long enough to wait on.
    fn period(&self) -> Option<f64> {
        if self.spacings.len() < 3 {
            return None;
        }
        let mut v: Vec<f64> = self.spacings.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        let period = v[v.len() / 2];
        (period >= 4.0 * self.poll).then_some(period)
    }

    /// A poll at `t` found the counter `moved` (or where it was).
    fn polled(&mut self, t: f64, moved: bool) {
        if !moved {
            self.still_since_move = true;
            return;
        }
        if let Some(last) = self.last {
            // Found by the first poll after a quiet: it moved at some moment of the quiet.
            if self.period().is_some() && !self.still_since_move {
                self.late += 1;
                if self.late >= 2 {
                    self.spacings.clear();
                    self.late = 0;
                }
            } else {
                self.late = 0;
                if self.spacings.len() == Self::KEEP {
                    self.spacings.pop_front();
                }
                self.spacings.push_back(t - last);
            }
        }
        self.last = Some(t);
        self.still_since_move = false;
    }

    /// The polling stopped: the next move seen is not one period after the last.
    fn paused(&mut self) {
        self.last = None;
        self.still_since_move = false;
    }

    /// Until when (the log's seconds) no poll is needed; `None`: poll now.
    fn quiet_until(&self) -> Option<f64> {
        Some(self.last? + Self::QUIET * self.period()?)
    }
}

/// One RAPL domain (a CPU package): its counter file and where it wraps.
#[derive(Debug, Clone)]
struct Rapl {
    energy: PathBuf,
    range: u64,
    last: Option<u64>,
    /// Microjoules counted since the first reading.
    total: u64,
}

/// The top-level RAPL domains under `root/sys/class/powercap` whose counter can be read
/// (`intel-rapl:N`, not their sub-domains `intel-rapl:N:M`, which the package already counts).
fn rapl_domains(root: &Path) -> Vec<Rapl> {
    let Ok(dir) = std::fs::read_dir(root.join("sys/class/powercap")) else {
        return Vec::new();
    };
    let mut out: Vec<Rapl> = dir
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.split(':').count() == 2 && name.contains("rapl")
        })
        .filter_map(|e| {
            let energy = e.path().join("energy_uj");
            std::fs::read_to_string(&energy)
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()?;
            let range = std::fs::read_to_string(e.path().join("max_energy_range_uj"))
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(u64::MAX);
            Some(Rapl {
                energy,
                range,
                last: None,
                total: 0,
            })
        })
        .collect();
    out.sort_by(|a, b| a.energy.cmp(&b.energy));
    out
}

/// The sum of the CPUs' thermal-throttle counts (`thermal_throttle/*_throttle_count`), where
/// the kernel keeps them (x86).
fn cpu_throttle_count(root: &Path) -> Option<u64> {
    let dir = std::fs::read_dir(root.join("sys/devices/system/cpu")).ok()?;
    let mut found = false;
    let mut sum = 0u64;
    for cpu in dir.flatten() {
        let name = cpu.file_name().to_string_lossy().into_owned();
        if !name.starts_with("cpu") || !name[3..].chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for f in ["core_throttle_count", "package_throttle_count"] {
            if let Some(n) = std::fs::read_to_string(cpu.path().join("thermal_throttle").join(f))
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
            {
                found = true;
                sum += n;
            }
        }
    }
    found.then_some(sum)
}

/// An NVIDIA GPU through NVML.
#[cfg(not(target_os = "macos"))]
struct Nvidia {
    nvml: nvml_wrapper::Nvml,
    /// The GPU's handle, asked for once (`nvmlDeviceGetHandleByIndex` took 6 ms after an init on
    /// the H100 here): a poll of the counter is then the counter's call alone.
    handle: nvml_wrapper_sys::bindings::nvmlDevice_t,
}

#[cfg(not(target_os = "macos"))]
impl Nvidia {
    fn open(index: u32) -> Result<Self, String> {
        let nvml = nvml_wrapper::Nvml::init().map_err(|e| format!("NVML: {e}"))?;
        let d = nvml
            .device_by_index(index)
            .map_err(|e| format!("NVML GPU {index}: {e}"))?;
        // SAFETY: the raw handle of a device of `nvml`, kept beside it and used only with it.
        let handle = unsafe { d.handle() };
        Ok(Self { nvml, handle })
    }

    /// The GPU, from the handle kept.
    fn device(&self) -> nvml_wrapper::Device<'_> {
        // SAFETY: `handle` came from `self.nvml`, which lives as long as the device returned.
        unsafe { nvml_wrapper::Device::new(self.handle, &self.nvml) }
    }

    /// Power, utilisation, temperature and throttling (the energy is [`Self::energy`]).
    fn read(&self, s: &mut ConditionSample) {
        use nvml_wrapper::bitmasks::device::ThrottleReasons;
        use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
        let d = self.device();
        // The instant reading where the driver has it: on Ampere and newer `power_usage` is a
        // one-second average, which a point of a second or less reads mostly from before it
        // (an H100 cnn point at 529 W by the energy counter read 232 W that way).
        s.gpu_watts =
            instant_watts(&d).or_else(|| d.power_usage().ok().map(|mw| f64::from(mw) / 1e3));
        s.gpu_util = d.utilization_rates().ok().map(|u| f64::from(u.gpu) / 100.0);
        let gpu = d.temperature(TemperatureSensor::Gpu).ok().map(f64::from);
        s.temp_c = match (gpu, s.temp_c) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if let Ok(r) = d.current_throttle_reasons() {
            // Heat and hardware slowdowns; the power cap a GPU under full load sits at is its
            // normal state, not a throttle.
            let slow = r.intersects(
                ThrottleReasons::HW_SLOWDOWN
                    | ThrottleReasons::HW_THERMAL_SLOWDOWN
                    | ThrottleReasons::SW_THERMAL_SLOWDOWN
                    | ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN,
            );
            s.throttled = Some(slow || s.throttled == Some(true));
            if slow {
                s.thermal = Some(ThermalState::Serious);
            }
        }
    }

    /// The GPU's energy counter, joules.
    fn energy(&self) -> Option<f64> {
        let d = self.device();
        #[allow(clippy::cast_precision_loss)]
        d.total_energy_consumption().ok().map(|mj| mj as f64 / 1e3)
    }
}

/// NVML's field for the GPU's instant power draw, in milliwatts (`NVML_FI_DEV_POWER_INSTANT`).
#[cfg(not(target_os = "macos"))]
const NVML_POWER_INSTANT: u32 = 186;

/// The GPU's instant power in watts, from NVML's field values; `None` where the driver or the
/// GPU does not give it.
#[cfg(not(target_os = "macos"))]
fn instant_watts(d: &nvml_wrapper::Device<'_>) -> Option<f64> {
    let sample = d
        .field_values_for(&[nvml_wrapper::structs::device::FieldId(NVML_POWER_INSTANT)])
        .ok()?
        .into_iter()
        .next()?
        .ok()?;
    milliwatts(&sample.value.ok()?)
}

/// A field value in milliwatts as watts (the field's type is the driver's choice).
#[cfg(not(target_os = "macos"))]
fn milliwatts(v: &nvml_wrapper::enums::device::SampleValue) -> Option<f64> {
    use nvml_wrapper::enums::device::SampleValue;
    #[allow(clippy::cast_precision_loss)]
    let mw = match *v {
        SampleValue::F64(x) => x,
        SampleValue::U32(x) => f64::from(x),
        SampleValue::U64(x) => x as f64,
        SampleValue::I64(x) => x as f64,
    };
    (mw.is_finite() && mw >= 0.0).then(|| mw / 1e3)
}

/// Reads the machine's state now.
pub struct Reader {
    root: PathBuf,
    #[cfg(not(target_os = "macos"))]
    nvidia: Option<Nvidia>,
    #[cfg(target_os = "macos")]
    mac: Option<crate::conditions_macos::Apple>,
    rapl: Vec<Rapl>,
    throttles: Option<u64>,
    /// What could not be read, once.
    pub unavailable: Vec<String>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("rapl", &self.rapl.len())
            .field("unavailable", &self.unavailable)
            .finish_non_exhaustive()
    }
}

impl Reader {
    /// For the job's device (`cuda:1` reads that NVIDIA GPU through NVML), reading the
    /// kernel's files under `root` ("/" but in tests).
    pub fn new(device: Option<&str>, root: &Path) -> Self {
        let mut unavailable = Vec::new();
        // A job on a CUDA device reads that GPU; a run whose device is not known yet (the
        // user's script) reads the first visible one if NVML is there, and says nothing if not.
        #[cfg(not(target_os = "macos"))]
        let nvidia = {
            let asked = device.is_some_and(|d| d.starts_with("cuda"));
            device
                .map_or(Some("cuda:0"), |d| d.starts_with("cuda").then_some(d))
                .and_then(|d| {
                    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
                    crate::gpu_busy::nvidia_index(d, visible.as_deref())
                })
                .and_then(|i| {
                    Nvidia::open(i)
                        .map_err(|e| {
                            if asked {
                                unavailable.push(format!("the GPU's power and energy ({e})"));
                            }
                        })
                        .ok()
                })
        };
        #[cfg(target_os = "macos")]
        let mac = {
            let _ = device;
            crate::conditions_macos::Apple::open()
                .map_err(|e| unavailable.push(format!("CPU and GPU power ({e})")))
                .ok()
        };
        let rapl = rapl_domains(root);
        if cfg!(target_os = "linux") && rapl.is_empty() {
            unavailable.push(
                "the CPU's energy (no readable RAPL counter under /sys/class/powercap: a VM, or it is root-only)"
                    .into(),
            );
        }
        Self {
            root: root.to_owned(),
            #[cfg(not(target_os = "macos"))]
            nvidia,
            #[cfg(target_os = "macos")]
            mac,
            rapl,
            throttles: cpu_throttle_count(root),
            unavailable,
        }
    }

    /// Where this reader's energy comes from, if anywhere.
    pub fn energy_source(&self) -> Option<String> {
        let mut parts = Vec::new();
        #[cfg(not(target_os = "macos"))]
        if self.nvidia.is_some() {
            parts.push("NVML energy counter");
        }
        if !self.rapl.is_empty() {
            parts.push("RAPL package counters");
        }
        #[cfg(target_os = "macos")]
        if self.mac.is_some() {
            return Some("IOReport power (macmon) × time".into());
        }
        (!parts.is_empty()).then(|| parts.join(" + "))
    }

    /// The period the energy counter is expected to move in, where it is known before it is
    /// seen: NVML's counter alone ([`Cadence::NVML_PERIOD`]).
    fn counter_period(&self) -> Option<f64> {
        #[cfg(not(target_os = "macos"))]
        if self.nvidia.is_some() && self.rapl.is_empty() {
            return Some(Cadence::NVML_PERIOD);
        }
        None
    }

    /// One reading, `t` seconds into the job. On macOS it takes `interval` (macmon measures
    /// power over it); elsewhere it returns at once.
    pub fn read(&mut self, t: f64, interval: Duration) -> ConditionSample {
        let mut s = ConditionSample {
            t,
            ..ConditionSample::default()
        };
        if cfg!(target_os = "linux") {
            self.read_linux(&mut s);
        }
        #[cfg(not(target_os = "macos"))]
        if let Some(n) = &self.nvidia {
            n.read(&mut s);
            let _ = interval;
        }
        #[cfg(target_os = "macos")]
        if let Some(m) = &mut self.mac {
            m.read(&mut s, interval);
        }
        s.energy_j = self.energy_now();
        s
    }

    /// RAPL's package counters, summed since the first reading (their wraps counted).
    fn rapl_joules(&mut self) -> Option<f64> {
        if self.rapl.is_empty() {
            return None;
        }
        let mut uj = 0u64;
        for d in &mut self.rapl {
            if let Some(now) = std::fs::read_to_string(&d.energy)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
            {
                if let Some(last) = d.last {
                    d.total += wrapped_rise(last, now, d.range);
                }
                d.last = Some(now);
            }
            uj += d.total;
        }
        #[allow(clippy::cast_precision_loss)]
        Some(uj as f64 / 1e6)
    }

    /// The energy counters alone (NVML's and RAPL's, summed: a reading's `energy_j`), quick
    /// enough to poll every few milliseconds; `None` where there is no counter (macOS reads
    /// power over time).
    pub fn energy_now(&mut self) -> Option<f64> {
        #[cfg(not(target_os = "macos"))]
        let mut energy = self.nvidia.as_ref().and_then(Nvidia::energy);
        #[cfg(target_os = "macos")]
        let mut energy = None;
        if let Some(j) = self.rapl_joules() {
            energy = Some(energy.unwrap_or(0.0) + j);
        }
        energy
    }

    fn read_linux(&mut self, s: &mut ConditionSample) {
        if let Some((source, battery)) = crate::readiness::linux::read_power_supply(&self.root) {
            match source {
                crate::readiness::PowerSource::Battery => s.on_battery = Some(true),
                crate::readiness::PowerSource::Ac | crate::readiness::PowerSource::Ups => {
                    s.on_battery = Some(false);
                }
                crate::readiness::PowerSource::Unknown => {}
            }
            s.battery_percent = battery.and_then(|b| b.percent).map(f64::from);
        }
        let zones = crate::readiness::linux::read_thermal_zones(&self.root);
        if !zones.is_empty() {
            let hot = zones
                .iter()
                .any(|z| z.trip_celsius.is_some_and(|trip| z.celsius >= trip));
            s.thermal = Some(if hot {
                ThermalState::Serious
            } else {
                ThermalState::Nominal
            });
            s.temp_c = zones.iter().map(|z| z.celsius).reduce(f64::max);
        }
        if let Some(now) = cpu_throttle_count(&self.root) {
            s.throttled = Some(self.throttles.is_some_and(|last| now > last));
            self.throttles = Some(now);
        }
    }
}

/// The machine's state read every [`INTERVAL`] on a thread of its own through a job; spans of
/// it ([`ConditionLog::span`]) are what each point or epoch ran under.
#[derive(Debug)]
pub struct ConditionLog {
    samples: Arc<Mutex<Vec<ConditionSample>>>,
    stop: Arc<AtomicBool>,
    /// A reading asked for now (a span's end), and the sampler's wake-up.
    wake: Arc<(Mutex<bool>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
    started: Instant,
    /// `started` on the wall clock, in seconds since the Unix epoch.
    started_unix: f64,
    /// Set while a short span is timed: the energy counter is polled every few milliseconds
    /// and each moment it moved kept in `edges`.
    fine: Arc<AtomicBool>,
    edges: Arc<Mutex<Vec<(f64, f64)>>>,
    /// When the polling was on: `(from, to)`, `to` unset while it still is.
    polled: Mutex<Vec<(f64, Option<f64>)>>,
    source: Arc<Mutex<Option<String>>>,
    unavailable: Arc<Mutex<Vec<String>>>,
    /// `HEADROOM_CONDITIONS=coarse`, read once at the start: the counter is never polled.
    coarse: bool,
    /// `HEADROOM_CONDITIONS_TRACE` set, read once at the start.
    trace: bool,
}

/// Whether the conditions are not read at all (`HEADROOM_CONDITIONS=off`, for benchmarks of
/// their cost).
pub fn off() -> bool {
    std::env::var(OFF_ENV).is_ok_and(|v| v == "off")
}

/// Whether the energy counter is never polled (`HEADROOM_CONDITIONS=coarse`).
fn coarse() -> bool {
    std::env::var(OFF_ENV).is_ok_and(|v| v == "coarse")
}

impl ConditionLog {
    /// Starts reading for a job on `device` (none: the CPU).
    pub fn start(device: Option<&str>, interval: Duration) -> Self {
        Self::start_at(device, interval, Path::new("/"))
    }

    /// [`Self::start`], reading the kernel's files under `root` ("/" but in tests).
    fn start_at(device: Option<&str>, interval: Duration, root: &Path) -> Self {
        let root = root.to_owned();
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let source = Arc::new(Mutex::new(None));
        let unavailable = Arc::new(Mutex::new(Vec::new()));
        let started = Instant::now();
        let started_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let wake = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let fine = Arc::new(AtomicBool::new(false));
        let edges = Arc::new(Mutex::new(Vec::new()));
        let off = off();
        let poll = fine_poll();
        let trace = std::env::var_os(TRACE_ENV).is_some();
        let thread = (!off)
            .then(|| {
                let (samples, stop, source, unavailable, wake) = (
                    Arc::clone(&samples),
                    Arc::clone(&stop),
                    Arc::clone(&source),
                    Arc::clone(&unavailable),
                    Arc::clone(&wake),
                );
                let (fine, edges) = (Arc::clone(&fine), Arc::clone(&edges));
                let device = device.map(str::to_owned);
                std::thread::Builder::new()
                    .name("headroom-conditions".into())
                    .spawn(move || {
                        // The reader lives on this thread (macmon's sampler is not Send).
                        let opened = Instant::now();
                        let mut reader = Reader::new(device.as_deref(), &root);
                        if trace {
                            eprintln!(
                                "headroom: conditions reader opened in {:.1} ms",
                                opened.elapsed().as_secs_f64() * 1e3
                            );
                        }
                        *lock(&source) = reader.energy_source();
                        *lock(&unavailable) = std::mem::take(&mut reader.unavailable);
                        let mut asked = false;
                        let mut counter = None;
                        // Polling is for a counter: without one (macOS, a VM) it never wakes.
                        let has_counter = reader.energy_now().is_some();
                        let (mut polls, mut poll_s) = (0_u32, 0.0_f64);
                        let mut cadence =
                            Cadence::new(poll.as_secs_f64(), reader.counter_period());
                        while !stop.load(Ordering::SeqCst) {
                            let t = started.elapsed().as_secs_f64();
                            // A reading asked for is quick (macmon's power over a tenth of a second).
                            let over = if asked {
                                interval.min(Duration::from_millis(100))
                            } else {
                                interval
                            };
                            let s = reader.read(t, over);
                            if trace {
                                eprintln!(
                                    "headroom: conditions reading at {t:.3} s took {:.1} ms",
                                    (started.elapsed().as_secs_f64() - t) * 1e3
                                );
                            }
                            lock(&samples).push(s);
                            wake.1.notify_all();
                            // Until the next reading, a stop or a reading asked for.
                            let until = Instant::now() + interval;
                            let mut flag = lock(&wake.0);
                            loop {
                                let left = until.saturating_duration_since(Instant::now());
                                if *flag || left.is_zero() || stop.load(Ordering::SeqCst) {
                                    break;
                                }
                                let polling = has_counter && fine.load(Ordering::SeqCst);
                                let now_s = started.elapsed().as_secs_f64();
                                let quiet = polling
                                    .then(|| cadence.quiet_until())
                                    .flatten()
                                    .filter(|q| *q > now_s);
                                let slice = match quiet {
                                    _ if !polling => left,
                                    Some(q) => left.min(Duration::from_secs_f64(q - now_s)),
                                    None => left.min(poll),
                                };
                                flag = wake
                                    .1
                                    .wait_timeout(flag, slice)
                                    .map_or_else(|e| e.into_inner().0, |(g, _)| g);
                                // Woken inside the quiet part of the period (a reading asked
                                // for, a stop): no poll yet.
                                if quiet.is_some_and(|q| started.elapsed().as_secs_f64() < q) {
                                    continue;
                                }
                                if polling {
                                    // Each moment the counter moved, to the poll's precision.
                                    let polled_at = Instant::now();
                                    let now = reader.energy_now();
                                    if trace {
                                        polls += 1;
                                        poll_s += polled_at.elapsed().as_secs_f64();
                                    }
                                    let t = started.elapsed().as_secs_f64();
                                    if let Some(j) = now.filter(|_| now != counter) {
                                        lock(&edges).push((t, j));
                                    }
                                    // The first poll after a pause only finds where it stands.
                                    if counter.is_some() && now.is_some() {
                                        cadence.polled(t, now != counter);
                                    }
                                    counter = now;
                                } else {
                                    counter = None;
                                    cadence.paused();
                                }
                            }
                            asked = std::mem::take(&mut *flag);
                        }
                        if trace {
                            eprintln!(
                                "headroom: conditions polled the counter {polls} times, {:.1} ms in all",
                                poll_s * 1e3
                            );
                        }
                    })
                    .ok()
            })
            .flatten();
        if off {
            lock(&unavailable).push(format!("conditions ({OFF_ENV}=off)"));
        }
        Self {
            samples,
            stop,
            wake,
            thread,
            started,
            started_unix,
            fine,
            edges,
            polled: Mutex::new(Vec::new()),
            source,
            unavailable,
            coarse: coarse(),
            trace,
        }
    }

    /// Seconds since the log started (to mark a span's ends).
    pub fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// A reading now (a span's start or end), waited for: its time, to give [`Self::span`].
    /// Without a sampler (turned off), the time now.
    pub fn mark(&self) -> f64 {
        if self.thread.is_none() {
            return self.now();
        }
        let asked = Instant::now();
        let t = self.mark_waited();
        if self.trace {
            eprintln!(
                "headroom: conditions mark at {t:.3} s waited {:.1} ms",
                asked.elapsed().as_secs_f64() * 1e3
            );
        }
        t
    }

    /// [`Self::mark`] with a sampler: asks for a reading and waits for it (2 s at most).
    fn mark_waited(&self) -> f64 {
        let before = lock(&self.samples).len();
        self.ask();
        self.wait_for(|s| s.get(before).map(|r| r.t))
            .unwrap_or_else(|| self.now())
    }

    /// Waits (2 s at most) until `found` finds what it looks for among the readings.
    fn wait_for(&self, found: impl Fn(&[ConditionSample]) -> Option<f64>) -> Option<f64> {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut flag = lock(&self.wake.0);
        loop {
            if let Some(t) = found(&lock(&self.samples)) {
                return Some(t);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            flag = self
                .wake
                .1
                .wait_timeout(flag, left.min(Duration::from_millis(50)))
                .map_or_else(|e| e.into_inner().0, |(g, _)| g);
        }
    }

    /// Waits (2 s at most) for a reading taken at `t` or later — one asked for then, by
    /// [`Self::ask`] or [`Self::fine`] — so that a span ending now holds it. Asked for well
    /// before (a point's timed steps take a quarter second, a reading a few milliseconds) it has
    /// come already and nothing is waited for: a span's end needs no reading of its own, taken
    /// just as the job moves on to its next step (a sweep's worker freeing and allocating for
    /// its next point, where calls into the GPU's driver cost it most).
    pub fn settle(&self, t: f64) {
        if self.thread.is_none() {
            return;
        }
        let asked = Instant::now();
        let found = self.wait_for(|s| s.iter().rev().find(|r| r.t >= t).map(|r| r.t));
        if self.trace {
            eprintln!(
                "headroom: conditions settled on the reading asked at {t:.3} s ({}) after {:.1} ms",
                found.map_or_else(|| "none came".to_owned(), |r| format!("taken at {r:.3} s")),
                asked.elapsed().as_secs_f64() * 1e3
            );
        }
    }

    /// Asks for a reading now without waiting for it (a short span's readings: a point timed
    /// for a second has one every few steps, not one at each end only).
    pub fn ask(&self) {
        if self.thread.is_some() {
            let mut flag = lock(&self.wake.0);
            *flag = true;
            self.wake.1.notify_all();
        }
    }

    /// Begins (on) or ends (off) a short span — a sweep's point — without waiting for anything:
    /// the energy counter is polled every few milliseconds from now on, so that the span's
    /// joules come from the counter's own updates ([`TimedConditions::over_edges`]), and (on) a
    /// reading is asked for. The time now, to give [`Self::span`]: the reading asked for is
    /// taken at it or after. `HEADROOM_CONDITIONS=coarse` asks for the reading alone.
    pub fn fine(&self, on: bool) -> f64 {
        let now = self.now();
        if self.thread.is_none() {
            return now;
        }
        if !self.coarse && self.fine.swap(on, Ordering::SeqCst) != on {
            let mut polled = lock(&self.polled);
            if on {
                polled.push((now, None));
            } else if let Some(last) = polled.last_mut() {
                last.1 = Some(now);
            }
        }
        if on {
            self.ask();
        }
        now
    }

    /// The conditions from `from` to `to` seconds, with what could not be read.
    pub fn span(&self, from: f64, to: f64) -> TimedConditions {
        let source = lock(&self.source).clone();
        // Polled through it: polling began by its start and ended no earlier than a reading's
        // wait before its end (a span's end is marked just after the polling stops).
        let polled = lock(&self.polled)
            .iter()
            .any(|(a, b)| *a <= from && b.is_none_or(|b| b + 0.25 >= to));
        let mut c = TimedConditions::over_edges(
            &lock(&self.samples),
            &lock(&self.edges),
            polled,
            from,
            to,
            source.as_deref(),
        );
        c.unavailable = lock(&self.unavailable).clone();
        c.from_unix = Some(self.started_unix + from);
        c
    }

    /// Stops reading; the readings taken.
    pub fn finish(mut self) -> Vec<ConditionSample> {
        self.halt();
        std::mem::take(&mut *lock(&self.samples))
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ConditionLog {
    /// Tells the reader to stop and leaves it to end on its own thread, as the GPU-busy sampler
    /// does: its last reading and NVML's shutdown need not hold up a job's answer
    /// ([`Self::finish`] waits, for its readings).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake.1.notify_all();
        self.thread.take();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    /// A sysfs tree as a laptop's kernel lays it out: two RAPL packages (one near its wrap),
    /// a sub-domain that must not be counted twice, the CPUs' throttle counts, a thermal zone
    /// and a battery that discharges.
    #[test]
    fn the_kernels_files_give_energy_throttling_and_power_source() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path();
        write(
            root,
            "sys/class/powercap/intel-rapl:0/energy_uj",
            "1000000\n",
        );
        write(
            root,
            "sys/class/powercap/intel-rapl:0/max_energy_range_uj",
            "262143328850\n",
        );
        write(
            root,
            "sys/class/powercap/intel-rapl:1/energy_uj",
            "262143000000\n",
        );
        write(
            root,
            "sys/class/powercap/intel-rapl:1/max_energy_range_uj",
            "262143328850\n",
        );
        write(
            root,
            "sys/class/powercap/intel-rapl:0:0/energy_uj",
            "500000\n",
        );
        write(
            root,
            "sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count",
            "3\n",
        );
        write(
            root,
            "sys/devices/system/cpu/cpu0/thermal_throttle/package_throttle_count",
            "1\n",
        );
        write(
            root,
            "sys/class/thermal/thermal_zone0/type",
            "x86_pkg_temp\n",
        );
        write(root, "sys/class/thermal/thermal_zone0/temp", "61000\n");
        write(
            root,
            "sys/class/thermal/thermal_zone0/trip_point_0_temp",
            "95000\n",
        );
        write(
            root,
            "sys/class/thermal/thermal_zone0/trip_point_0_type",
            "passive\n",
        );
        write(root, "sys/class/power_supply/BAT0/type", "Battery\n");
        write(root, "sys/class/power_supply/BAT0/status", "Discharging\n");
        write(root, "sys/class/power_supply/BAT0/capacity", "76\n");
        let mut r = Reader::new(None, root);
        assert_eq!(r.rapl.len(), 2, "the sub-domain is left out");
        assert_eq!(r.energy_source().as_deref(), Some("RAPL package counters"));
        let a = r.read(0.0, INTERVAL);
        assert_eq!(a.energy_j, Some(0.0), "counted from the first reading");
        assert_eq!(a.throttled, Some(false));
        assert_eq!(a.thermal, Some(ThermalState::Nominal));
        assert_eq!(a.temp_c, Some(61.0));
        assert_eq!(a.on_battery, Some(true));
        assert_eq!(a.battery_percent, Some(76.0));
        // A second later: package 0 used 12 J, package 1 wrapped after 5 J; the CPU throttled.
        write(
            root,
            "sys/class/powercap/intel-rapl:0/energy_uj",
            "13000000\n",
        );
        write(
            root,
            "sys/class/powercap/intel-rapl:1/energy_uj",
            "4671150\n",
        );
        write(
            root,
            "sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count",
            "9\n",
        );
        write(root, "sys/class/thermal/thermal_zone0/temp", "97000\n");
        let b = r.read(1.0, INTERVAL);
        assert!((b.energy_j.unwrap() - 17.0).abs() < 1e-6, "{b:?}");
        assert_eq!(b.throttled, Some(true));
        assert_eq!(b.thermal, Some(ThermalState::Serious));
        let c = TimedConditions::over(&[a, b], 0.0, 1.0, r.energy_source().as_deref());
        assert!((c.energy_j.unwrap() - 17.0).abs() < 1e-6);
        assert_eq!(c.throttled_share, Some(0.5));
        // The counters alone (what a short span polls), on the same running total.
        assert!((r.energy_now().unwrap() - 17.0).abs() < 1e-6);
        write(
            root,
            "sys/class/powercap/intel-rapl:0/energy_uj",
            "14500000\n",
        );
        assert!((r.energy_now().unwrap() - 18.5).abs() < 1e-6);
    }

    /// Polls a counter that moves every `period` seconds from `from` to `to` as the sampler's
    /// loop does (each poll waits out the quiet it is given, or `c.poll`): how many polls were
    /// made, and for each move seen, how long after the move it was seen.
    fn polled_through(c: &mut Cadence, period: f64, from: f64, to: f64) -> (u32, Vec<f64>) {
        let value = |t: f64| (t / period).floor();
        let (mut t, mut polls, mut late) = (from, 0, Vec::new());
        let mut counter = None;
        c.paused();
        while t < to {
            t = match c.quiet_until() {
                Some(q) if q > t => q,
                _ => t + c.poll,
            };
            polls += 1;
            let now = value(t);
            if let Some(was) = counter {
                c.polled(t, now != was);
                if now != was {
                    late.push(t - now * period);
                }
            }
            counter = Some(now);
        }
        (polls, late)
    }

    /// NVML's counter, moving every 100 ms, polled every 5 ms: once the period is known the
    /// polls wait out most of it, each move still seen within a poll of when it came.
    #[test]
    fn the_polls_wait_out_most_of_the_counters_period_once_it_is_known() {
        let poll = 0.005;
        // Learnt: the first 0.3 s are polled finely, then two or three polls a period.
        let mut c = Cadence::new(poll, None);
        assert_eq!(c.quiet_until(), None, "nothing seen: poll");
        let (cold, late) = polled_through(&mut c, 0.1, 1.003, 1.6);
        assert!(late.iter().all(|l| *l <= poll + 1e-9), "{late:?}");
        assert_eq!(late.len(), 6, "every move seen: {late:?}");
        let period = c.period().expect("a period learnt");
        assert!((period - 0.1).abs() <= poll, "{period}");
        // Known: a second point of the same length polls far less, and sees every move as soon.
        let (warm, late) = polled_through(&mut c, 0.1, 3.003, 3.6);
        assert!(late.iter().all(|l| *l <= poll + 1e-9), "{late:?}");
        assert_eq!(late.len(), 6, "{late:?}");
        assert!(warm * 3 < cold * 2, "{warm} polls against {cold}");
        // NVML's usual period to start from: the first point waits after its first move.
        let mut seeded = Cadence::new(poll, Some(Cadence::NVML_PERIOD));
        let (first, late) = polled_through(&mut seeded, 0.1, 1.003, 1.6);
        assert_eq!(late.len(), 6, "{late:?}");
        assert!(late.iter().all(|l| *l <= poll + 1e-9), "{late:?}");
        assert!(first <= warm + 2, "{first} against {cold} / {warm}");
        // RAPL's counter moves at every poll: polled as it is.
        let mut r = Cadence::new(poll, None);
        let (polls, late) = polled_through(&mut r, 0.001, 0.0, 0.1);
        assert_eq!(r.period(), None);
        assert_eq!(late.len() + 1, polls as usize, "a move at every poll");
    }

    /// A period that is wrong (a seed for a counter that moves faster) is forgotten after two
    /// moves found at a quiet's end, and the true one learnt: the moves are then seen as they
    /// come, not a quiet late.
    #[test]
    fn a_wrong_period_is_forgotten_and_the_true_one_learnt() {
        let poll = 0.005;
        let mut c = Cadence::new(poll, Some(0.1));
        let (_, late) = polled_through(&mut c, 0.025, 1.001, 1.6);
        let period = c.period().expect("a period learnt");
        assert!((period - 0.025).abs() <= poll, "{period}");
        // After the first few, each move is seen within a poll of it.
        assert!(late.len() >= 20, "{late:?}");
        assert!(late[6..].iter().all(|l| *l <= poll + 1e-9), "{late:?}");
        // And with a period too long for the counter from the start (its moves found at once
        // after each quiet), the spacings so seen are never taken for its period.
        let mut d = Cadence::new(poll, Some(0.1));
        for t in [1.0, 1.08, 1.16] {
            d.polled(t, true);
        }
        assert_eq!(d.period(), None, "forgotten after two late moves");
    }

    /// A RAPL counter that moves only every 100 ms (as NVML's does) at 50 W: a point of 0.6 s
    /// polled through takes its energy from the counter's updates, not from its two ends.
    #[test]
    fn a_polled_span_reads_the_counter_at_its_updates() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().to_owned();
        let file = "sys/class/powercap/intel-rapl:0/energy_uj";
        write(
            &root,
            "sys/class/powercap/intel-rapl:0/max_energy_range_uj",
            "262143328850\n",
        );
        write(&root, file, "0\n");
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (root, stop) = (root.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let begun = Instant::now();
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                    // 50 W since the start, in whole tenths of a second.
                    let tenths = (begun.elapsed().as_secs_f64() * 10.0).floor();
                    let uj = (tenths * 5.0 * 1e6) as u64;
                    let tmp = root.join("energy.tmp");
                    std::fs::write(&tmp, format!("{uj}\n")).expect("write");
                    std::fs::rename(&tmp, root.join(file)).expect("rename");
                }
            })
        };
        let log = ConditionLog::start_at(None, Duration::from_secs(30), &root);
        std::thread::sleep(Duration::from_millis(150));
        log.fine(true);
        let from = log.mark();
        std::thread::sleep(Duration::from_millis(600));
        log.fine(false);
        let to = log.mark();
        let c = log.span(from, to);
        stop.store(true, Ordering::SeqCst);
        writer.join().expect("writer");
        // The span on the wall clock: it began 0.6 s (and a little) before now.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs_f64();
        let began = now - c.from_unix.expect("the span's start on the wall clock");
        assert!((0.6..5.0).contains(&began), "began {began} s ago: {c:?}");
        let watts = c.watts().expect("energy from the polled counter");
        assert!((watts - 50.0).abs() < 50.0 * 0.15, "{watts} W: {c:?}");
        assert_eq!(
            c.energy_source.as_deref(),
            Some("RAPL package counters, read at its updates"),
            "{c:?}"
        );
        // Not polled: the two readings' figure, with no updates read.
        let plain = ConditionLog::start_at(None, Duration::from_secs(30), &root);
        let (a, b) = (plain.mark(), plain.mark());
        assert_eq!(
            plain.span(a, b).energy_source.as_deref(),
            Some("RAPL package counters")
        );
    }

    #[test]
    #[cfg(not(target_os = "macos"))]
    fn nvmls_instant_power_field_is_read_in_milliwatts_whatever_its_type() {
        use nvml_wrapper::enums::device::SampleValue;
        assert_eq!(milliwatts(&SampleValue::U32(529_000)), Some(529.0));
        assert_eq!(milliwatts(&SampleValue::U64(72_500)), Some(72.5));
        assert_eq!(milliwatts(&SampleValue::F64(1500.0)), Some(1.5));
        assert_eq!(milliwatts(&SampleValue::I64(-1)), None);
        assert_eq!(milliwatts(&SampleValue::F64(f64::NAN)), None);
    }

    #[test]
    fn a_machine_without_the_files_reads_nothing_and_says_so() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut r = Reader::new(None, dir.path());
        let s = r.read(0.0, INTERVAL);
        assert_eq!(s, ConditionSample::default());
        if cfg!(target_os = "linux") {
            assert!(r.unavailable[0].starts_with("the CPU's energy (no readable RAPL counter"));
        }
        // The log runs on this machine for real, a reading every 50 ms, and stops at once.
        let log = ConditionLog::start(None, Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(220));
        let span = log.span(0.0, log.now());
        assert!(span.samples >= 2, "{span:?}");
        // A span's ends are read when asked: a span shorter than the cadence has its readings.
        let slow = ConditionLog::start(None, Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(50));
        let from = slow.mark();
        let to = slow.mark();
        assert!(to > from, "{from} {to}");
        assert_eq!(slow.span(from, to).samples, 2);
        // A reading asked for without waiting comes at once, not at the 30 s cadence.
        slow.ask();
        let asked = Instant::now();
        while slow.span(from, slow.now()).samples < 3 {
            assert!(
                asked.elapsed() < Duration::from_secs(2),
                "the asked reading came"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // A short span begun and ended without waiting at either end (a sweep's point): the
        // reading asked for at its start is in it, come long before the cadence's next.
        let begun = slow.fine(true);
        std::thread::sleep(Duration::from_millis(30));
        slow.fine(false);
        let settled = Instant::now();
        slow.settle(begun);
        assert!(settled.elapsed() < Duration::from_secs(1));
        let short = slow.span(begun, slow.now());
        assert_eq!(short.samples, 1, "{short:?}");
        let begun = Instant::now();
        drop(slow);
        assert!(
            begun.elapsed() < Duration::from_secs(2),
            "a stop is taken at once"
        );
        let samples = log.finish();
        assert!(samples.windows(2).all(|w| w[0].t < w[1].t));
    }
}
