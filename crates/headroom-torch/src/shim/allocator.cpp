// Headroom's one C++ shim: libtorch's generic accelerator allocator API (ATen/DeviceAccelerator.h),
// which tch does not wrap. Every function catches C++ exceptions and reports them as a status code
// plus a message, so nothing unwinds across the FFI boundary.
#include <ATen/DeviceAccelerator.h>
#include <torch/version.h>
#include <cstring>
#include <exception>
#include <string>

#if defined(__APPLE__)
#include <ATen/detail/MPSHooksInterface.h>
#endif

extern "C" {

struct hr_device_stats {
  long long allocated_current;
  long long allocated_peak;
  long long reserved_current;
  long long reserved_peak;
};

static void hr_copy_message(const char* what, char* buf, size_t len) {
  if (buf == nullptr || len == 0) return;
  std::strncpy(buf, what, len - 1);
  buf[len - 1] = '\0';
}

#define HR_GUARD(body)                              \
  try {                                             \
    body;                                           \
    return 0;                                       \
  } catch (const std::exception& e) {               \
    hr_copy_message(e.what(), err, err_len);        \
    return -1;                                      \
  } catch (...) {                                   \
    hr_copy_message("unknown C++ exception", err, err_len); \
    return -1;                                      \
  }

const char* hr_libtorch_version() { return TORCH_VERSION; }

// Writes the accelerator's device type (c10::DeviceType as int) or -1 when there is none.
int hr_accelerator(int* device_type, char* err, size_t err_len) {
  HR_GUARD({
    auto acc = at::accelerator::getAccelerator(false);
    *device_type = acc.has_value() ? static_cast<int>(acc.value()) : -1;
  })
}

int hr_device_count(int* count, char* err, size_t err_len) {
  HR_GUARD({ *count = static_cast<int>(at::accelerator::deviceCount()); })
}

int hr_synchronize(int index, char* err, size_t err_len) {
  HR_GUARD({ at::accelerator::synchronizeDevice(static_cast<c10::DeviceIndex>(index)); })
}

int hr_get_device_stats(int index, hr_device_stats* out, char* err, size_t err_len) {
  HR_GUARD({
    auto stats = at::accelerator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
    const size_t agg = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    out->allocated_current = stats.allocated_bytes[agg].current;
    out->allocated_peak = stats.allocated_bytes[agg].peak;
    out->reserved_current = stats.reserved_bytes[agg].current;
    out->reserved_peak = stats.reserved_bytes[agg].peak;
  })
}

int hr_reset_peak_stats(int index, char* err, size_t err_len) {
  HR_GUARD({ at::accelerator::resetPeakStats(static_cast<c10::DeviceIndex>(index)); })
}

int hr_empty_cache(char* err, size_t err_len) { HR_GUARD({ at::accelerator::emptyCache(); }) }

int hr_memory_info(int index, unsigned long long* free_bytes, unsigned long long* total_bytes,
                   char* err, size_t err_len) {
  HR_GUARD({
    auto info = at::accelerator::getMemoryInfo(static_cast<c10::DeviceIndex>(index));
    *free_bytes = info.first;
    *total_bytes = info.second;
  })
}

// MPS's recommended working-set size (Metal's recommendedMaxWorkingSetSize); -1 off Apple.
int hr_mps_recommended_max(long long* bytes, char* err, size_t err_len) {
#if defined(__APPLE__)
  HR_GUARD({ *bytes = static_cast<long long>(at::detail::getMPSHooks().getRecommendedMaxMemory()); })
#else
  *bytes = -1;
  (void)err;
  (void)err_len;
  return 0;
#endif
}

}  // extern "C"
