//! Safe wrappers over the C++ shim (`src/shim/allocator.cpp`): the accelerator's allocator
//! statistics, peak reset, cache release, free/total memory, and device synchronisation.

use std::ffi::{c_char, c_int, c_longlong, c_ulonglong, CStr};

use crate::TorchError;

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct RawStats {
    allocated_current: c_longlong,
    allocated_peak: c_longlong,
    reserved_current: c_longlong,
    reserved_peak: c_longlong,
}

extern "C" {
    fn hr_libtorch_version() -> *const c_char;
    fn hr_accelerator(device_type: *mut c_int, err: *mut c_char, len: usize) -> c_int;
    fn hr_device_count(count: *mut c_int, err: *mut c_char, len: usize) -> c_int;
    fn hr_synchronize(index: c_int, err: *mut c_char, len: usize) -> c_int;
    fn hr_get_device_stats(index: c_int, out: *mut RawStats, err: *mut c_char, len: usize)
        -> c_int;
    fn hr_reset_peak_stats(index: c_int, err: *mut c_char, len: usize) -> c_int;
    fn hr_empty_cache(err: *mut c_char, len: usize) -> c_int;
    fn hr_memory_info(
        index: c_int,
        free: *mut c_ulonglong,
        total: *mut c_ulonglong,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    fn hr_mps_recommended_max(bytes: *mut c_longlong, err: *mut c_char, len: usize) -> c_int;
}

/// Allocator statistics of one accelerator device, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceStats {
    /// Bytes held by live tensors now.
    pub allocated_current: u64,
    /// Most bytes held by live tensors since the last peak reset.
    pub allocated_peak: u64,
    /// Bytes the caching allocator holds from the driver now.
    pub reserved_current: u64,
    /// Most bytes the caching allocator held since the last peak reset.
    pub reserved_peak: u64,
}

/// Calls one shim function with an error buffer and turns a non-zero status into an error.
fn call(what: &str, f: impl FnOnce(*mut c_char, usize) -> c_int) -> Result<(), TorchError> {
    let mut buf = [0 as c_char; 1024];
    let rc = f(buf.as_mut_ptr(), buf.len());
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: the shim always NUL-terminates the buffer it was given.
    let msg = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Err(TorchError::Allocator {
        what: what.to_owned(),
        message: msg,
    })
}

/// The libtorch version this binary was built against and runs with (e.g. `2.11.0`).
pub fn libtorch_version() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string literal.
    let raw = unsafe { CStr::from_ptr(hr_libtorch_version()) };
    raw.to_string_lossy().into_owned()
}

/// The c10 `DeviceType` number of the accelerator compiled into this libtorch, if any.
pub fn accelerator_type() -> Result<Option<i32>, TorchError> {
    let mut t: c_int = -1;
    // SAFETY: `t` outlives the call; the buffer is sized as passed.
    call("accelerator", |e, l| unsafe {
        hr_accelerator(&mut t, e, l)
    })?;
    Ok((t >= 0).then_some(t))
}

/// How many devices the accelerator has (0 when there is none).
pub fn device_count() -> Result<usize, TorchError> {
    let mut n: c_int = 0;
    // SAFETY: as above.
    call("device count", |e, l| unsafe {
        hr_device_count(&mut n, e, l)
    })?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Waits for all work queued on accelerator device `index`.
pub fn synchronize(index: usize) -> Result<(), TorchError> {
    let i = index_c(index);
    // SAFETY: plain value arguments and the sized error buffer.
    call("synchronize", |e, l| unsafe { hr_synchronize(i, e, l) })
}

/// Allocator statistics of accelerator device `index`.
pub fn device_stats(index: usize) -> Result<DeviceStats, TorchError> {
    let mut raw = RawStats::default();
    let i = index_c(index);
    // SAFETY: `raw` is a repr(C) struct matching the shim's layout.
    call("device stats", |e, l| unsafe {
        hr_get_device_stats(i, &mut raw, e, l)
    })?;
    let u = |v: c_longlong| u64::try_from(v).unwrap_or(0);
    Ok(DeviceStats {
        allocated_current: u(raw.allocated_current),
        allocated_peak: u(raw.allocated_peak),
        reserved_current: u(raw.reserved_current),
        reserved_peak: u(raw.reserved_peak),
    })
}

/// Resets the peak counters of accelerator device `index`.
pub fn reset_peak(index: usize) -> Result<(), TorchError> {
    let i = index_c(index);
    // SAFETY: as above.
    call("reset peak stats", |e, l| unsafe {
        hr_reset_peak_stats(i, e, l)
    })
}

/// Returns the caching allocator's unused blocks to the driver.
pub fn empty_cache() -> Result<(), TorchError> {
    // SAFETY: as above.
    call("empty cache", |e, l| unsafe { hr_empty_cache(e, l) })
}

/// Free and total bytes of accelerator device `index`, as the driver reports them.
pub fn memory_info(index: usize) -> Result<(u64, u64), TorchError> {
    let (mut free, mut total): (c_ulonglong, c_ulonglong) = (0, 0);
    let i = index_c(index);
    // SAFETY: both outputs outlive the call.
    call("memory info", |e, l| unsafe {
        hr_memory_info(i, &mut free, &mut total, e, l)
    })?;
    Ok((free, total))
}

/// MPS's recommended maximum working set in bytes; `None` off Apple platforms.
pub fn mps_recommended_max() -> Result<Option<u64>, TorchError> {
    let mut b: c_longlong = -1;
    // SAFETY: as above.
    call("mps recommended max", |e, l| unsafe {
        hr_mps_recommended_max(&mut b, e, l)
    })?;
    Ok(u64::try_from(b).ok())
}

fn index_c(index: usize) -> c_int {
    c_int::try_from(index).unwrap_or(c_int::MAX)
}
