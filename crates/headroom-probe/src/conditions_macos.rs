//! The macOS layer of [`crate::conditions`], compiled for Apple Silicon and never run on the
//! Linux machines Headroom is built on: CPU and GPU power, GPU residency and temperatures from
//! `macmon` (IOReport and SMC, no sudo), the thermal state and Low Power Mode from
//! `NSProcessInfo`, and the power source from IOKit's estimate of the time left (unlimited: on
//! mains). Every value lands in a `ConditionSample`; the arithmetic is tested on Linux.

use std::time::Duration;

use headroom_model::conditions::{ConditionSample, ThermalState};

/// `IOPSGetTimeRemainingEstimate`'s value on mains power (`kIOPSTimeRemainingUnlimited`).
const TIME_REMAINING_UNLIMITED: f64 = -2.0;

#[link(name = "IOKit", kind = "framework")]
unsafe extern "C" {
    /// Seconds of battery left, or -1 (still estimating) or -2 (on mains power).
    fn IOPSGetTimeRemainingEstimate() -> f64;
}

/// NSProcessInfo's thermal state on Headroom's scale.
pub fn thermal_of(raw: isize) -> Option<ThermalState> {
    match raw {
        0 => Some(ThermalState::Nominal),
        1 => Some(ThermalState::Fair),
        2 => Some(ThermalState::Serious),
        3 => Some(ThermalState::Critical),
        _ => None,
    }
}

/// On battery, from IOKit's estimate of the time left.
pub fn on_battery_of(estimate: f64) -> bool {
    (estimate - TIME_REMAINING_UNLIMITED).abs() > f64::EPSILON
}

/// macmon's sampler, opened once per job.
pub struct Apple {
    sampler: macmon::Sampler,
}

impl std::fmt::Debug for Apple {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Apple").finish_non_exhaustive()
    }
}

impl Apple {
    pub fn open() -> Result<Self, String> {
        macmon::Sampler::new()
            .map(|sampler| Self { sampler })
            .map_err(|e| format!("macmon: {e}"))
    }

    /// One reading over `interval` (macmon measures power from IOReport's energy over it).
    pub fn read(&mut self, s: &mut ConditionSample, interval: Duration) {
        let ms = u32::try_from(interval.as_millis()).unwrap_or(1000).max(100);
        if let Ok(m) = self.sampler.get_metrics(ms) {
            s.cpu_watts = Some(f64::from(m.cpu_power));
            s.gpu_watts = Some(f64::from(m.gpu_power));
            s.gpu_util = Some(f64::from(m.gpu_active_ratio));
            s.temp_c = [m.temp.cpu_temp_avg, m.temp.gpu_temp_avg]
                .into_iter()
                .flatten()
                .map(f64::from)
                .reduce(f64::max);
        }
        let info = objc2_foundation::NSProcessInfo::processInfo();
        s.thermal = thermal_of(info.thermalState().0);
        s.low_power = Some(info.isLowPowerModeEnabled());
        // SAFETY: a plain IOKit query with no arguments; it returns a number.
        let estimate = unsafe { IOPSGetTimeRemainingEstimate() };
        s.on_battery = Some(on_battery_of(estimate));
    }
}
