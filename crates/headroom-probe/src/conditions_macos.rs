//! The macOS layer of [`crate::conditions`], compiled for Apple Silicon and never run on the
//! Linux machines Headroom is built on: CPU and GPU power, GPU residency and temperatures from
//! `macmon` (IOReport and SMC, no sudo), the thermal state and Low Power Mode from
//! `NSProcessInfo`, and the power source from IOKit's estimate of the time left (unlimited: on
//! mains). Every value lands in a `ConditionSample`; the arithmetic is tested on Linux. The
//! readiness conditions (power source, battery, Low Power Mode, thermal state) come from the
//! same APIs and IOKit's power-source descriptions, never from `pmset`.

use std::time::Duration;

use std::ffi::c_void;

use headroom_model::conditions::{ConditionSample, PowerSourceDescription, ThermalState};

/// `IOPSGetTimeRemainingEstimate`'s value on mains power (`kIOPSTimeRemainingUnlimited`).
const TIME_REMAINING_UNLIMITED: f64 = -2.0;

#[link(name = "IOKit", kind = "framework")]
unsafe extern "C" {
    /// Seconds of battery left, or -1 (still estimating) or -2 (on mains power).
    fn IOPSGetTimeRemainingEstimate() -> f64;
    /// The power sources' snapshot (a CFTypeRef the caller releases).
    fn IOPSCopyPowerSourcesInfo() -> *const c_void;
    /// The sources in a snapshot (a CFArrayRef the caller releases).
    fn IOPSCopyPowerSourcesList(blob: *const c_void) -> *const c_void;
    /// One source's description (a CFDictionaryRef owned by the snapshot).
    fn IOPSGetPowerSourceDescription(blob: *const c_void, ps: *const c_void) -> *const c_void;
    /// A matching dictionary for the registry's class `name` (consumed by the lookup).
    fn IOServiceMatching(name: *const std::ffi::c_char) -> *const c_void;
    /// The registry entries that match, as an iterator (`main_port` 0: the default port).
    fn IOServiceGetMatchingServices(
        main_port: u32,
        matching: *const c_void,
        existing: *mut u32,
    ) -> i32;
    fn IOIteratorNext(iterator: u32) -> u32;
    /// An entry's properties as a CFDictionary the caller releases.
    fn IORegistryEntryCreateCFProperties(
        entry: u32,
        properties: *mut *const c_void,
        allocator: *const c_void,
        options: u32,
    ) -> i32;
    fn IOObjectRelease(object: u32) -> i32;
}

#[link(name = "CoreFoundation", kind = "framework")]
unsafe extern "C" {
    fn CFRelease(cf: *const c_void);
    fn CFGetTypeID(cf: *const c_void) -> usize;
    fn CFArrayGetCount(array: *const c_void) -> isize;
    fn CFArrayGetValueAtIndex(array: *const c_void, index: isize) -> *const c_void;
    fn CFDictionaryGetValue(dict: *const c_void, key: *const c_void) -> *const c_void;
    fn CFDictionaryGetTypeID() -> usize;
    fn CFNumberGetTypeID() -> usize;
    fn CFNumberGetValue(number: *const c_void, kind: isize, out: *mut c_void) -> bool;
    fn CFBooleanGetTypeID() -> usize;
    fn CFBooleanGetValue(boolean: *const c_void) -> bool;
    fn CFStringGetTypeID() -> usize;
    fn CFStringCreateWithCString(
        alloc: *const c_void,
        text: *const std::ffi::c_char,
        encoding: u32,
    ) -> *const c_void;
    fn CFStringGetCString(
        text: *const c_void,
        buffer: *mut std::ffi::c_char,
        size: isize,
        encoding: u32,
    ) -> bool;
}

/// `kCFStringEncodingUTF8`, `kCFNumberSInt64Type`.
const UTF8: u32 = 0x0800_0100;
const SINT64: isize = 4;

/// One value of an IOKit description, by its `IOPSKeys.h` key.
struct Described(*const c_void);

impl Described {
    fn value(&self, key: &str) -> *const c_void {
        let Ok(c) = std::ffi::CString::new(key) else {
            return std::ptr::null();
        };
        // SAFETY: a CFString made and released here; the dictionary outlives the lookup (the
        // snapshot that owns it is released after every read).
        unsafe {
            let k = CFStringCreateWithCString(std::ptr::null(), c.as_ptr(), UTF8);
            if k.is_null() {
                return std::ptr::null();
            }
            let v = CFDictionaryGetValue(self.0, k);
            CFRelease(k);
            v
        }
    }

    fn number(&self, key: &str) -> Option<i64> {
        let v = self.value(key);
        let mut out: i64 = 0;
        // SAFETY: the value's type is checked before it is read as a number.
        unsafe {
            (!v.is_null()
                && CFGetTypeID(v) == CFNumberGetTypeID()
                && CFNumberGetValue(v, SINT64, (&raw mut out).cast()))
            .then_some(out)
        }
    }

    fn boolean(&self, key: &str) -> Option<bool> {
        let v = self.value(key);
        // SAFETY: the value's type is checked before it is read as a boolean.
        unsafe {
            (!v.is_null() && CFGetTypeID(v) == CFBooleanGetTypeID()).then(|| CFBooleanGetValue(v))
        }
    }

    fn string(&self, key: &str) -> Option<String> {
        let v = self.value(key);
        let mut buf = [0 as std::ffi::c_char; 128];
        // SAFETY: the value's type is checked; the buffer's size is given.
        unsafe {
            if v.is_null()
                || CFGetTypeID(v) != CFStringGetTypeID()
                || !CFStringGetCString(v, buf.as_mut_ptr(), 128, UTF8)
            {
                return None;
            }
            Some(
                std::ffi::CStr::from_ptr(buf.as_ptr())
                    .to_string_lossy()
                    .into_owned(),
            )
        }
    }
}

/// Every power source IOKit describes (the internal battery, a UPS); none on a desktop.
pub fn power_sources() -> Vec<PowerSourceDescription> {
    let mut out = Vec::new();
    // SAFETY: IOKit's documented calls; the snapshot and the list are released here, the
    // descriptions (owned by the snapshot) are read before that.
    unsafe {
        let blob = IOPSCopyPowerSourcesInfo();
        if blob.is_null() {
            return out;
        }
        let list = IOPSCopyPowerSourcesList(blob);
        if !list.is_null() {
            for i in 0..CFArrayGetCount(list) {
                let d = IOPSGetPowerSourceDescription(blob, CFArrayGetValueAtIndex(list, i));
                if d.is_null() {
                    continue;
                }
                let d = Described(d);
                out.push(PowerSourceDescription {
                    kind: d.string("Type"),
                    state: d.string("Power Source State"),
                    current_capacity: d.number("Current Capacity"),
                    max_capacity: d.number("Max Capacity"),
                    is_charging: d.boolean("Is Charging"),
                    is_charged: d.boolean("Is Charged"),
                    time_to_empty: d.number("Time to Empty"),
                });
            }
            CFRelease(list);
        }
        CFRelease(blob);
    }
    out
}

/// The Apple GPU's utilisation and last submitter, from the first `IOAccelerator` entry of
/// the IORegistry that has them: its `PerformanceStatistics` "Device Utilization %" and its
/// `AGCInfo` `fLastSubmissionPID` (what `ioreg -c IOAccelerator` prints, read without starting
/// it), as (utilisation %, last submitter's pid). `None` where no entry has them.
pub fn accelerator() -> Option<(Option<i64>, Option<i64>)> {
    let class = std::ffi::CString::new("IOAccelerator").ok()?;
    // SAFETY: IOKit's documented registry calls. The matching dictionary is consumed by the
    // lookup; every entry, the iterator and each properties dictionary are released here;
    // nested dictionaries are owned by their parent and read before it is released.
    unsafe {
        let matching = IOServiceMatching(class.as_ptr());
        if matching.is_null() {
            return None;
        }
        let mut iter: u32 = 0;
        if IOServiceGetMatchingServices(0, matching, &raw mut iter) != 0 || iter == 0 {
            return None;
        }
        let mut found = None;
        loop {
            let entry = IOIteratorNext(iter);
            if entry == 0 {
                break;
            }
            let mut props: *const c_void = std::ptr::null();
            if found.is_none()
                && IORegistryEntryCreateCFProperties(entry, &raw mut props, std::ptr::null(), 0)
                    == 0
                && !props.is_null()
            {
                let d = Described(props);
                let nested = |key: &str| {
                    let v = d.value(key);
                    (!v.is_null() && CFGetTypeID(v) == CFDictionaryGetTypeID())
                        .then_some(Described(v))
                };
                let utilization =
                    nested("PerformanceStatistics").and_then(|p| p.number("Device Utilization %"));
                let submitter = nested("AGCInfo").and_then(|a| a.number("fLastSubmissionPID"));
                if utilization.is_some() {
                    found = Some((utilization, submitter));
                }
                CFRelease(props);
            }
            IOObjectRelease(entry);
        }
        IOObjectRelease(iter);
        found
    }
}

/// On mains power, from IOKit's estimate of the time left (unlimited on mains).
pub fn on_mains() -> bool {
    // SAFETY: a plain IOKit query with no arguments; it returns a number.
    !on_battery_of(unsafe { IOPSGetTimeRemainingEstimate() })
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
