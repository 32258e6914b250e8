#!/usr/bin/env python3
"""What NVML's calls cost the process that makes them (issue 42): nvmlInit_v2, a handle, each
reading the conditions sampler takes, the energy counter, and nvmlShutdown — timed through
ctypes on libnvidia-ml, N rounds (default 20), median and max in ms. Then as the sampler polls:
one init and handle, the energy counter asked 5 N times 5 ms apart, through its own call and
through nvmlDeviceGetFieldValues (NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION), in turn.

    python3 bench/nvml_call_cost.py [N]
"""
import ctypes, statistics, sys, time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
lib = ctypes.CDLL("libnvidia-ml.so.1")
times = {}


def timed(name, f, *args):
    t = time.perf_counter()
    rc = f(*args)
    times.setdefault(name, []).append((time.perf_counter() - t) * 1e3)
    return rc


h = ctypes.c_void_p()
u = ctypes.c_uint()
ull = ctypes.c_ulonglong()
util = (ctypes.c_uint * 2)()
for _ in range(n):
    timed("nvmlInit_v2", lib.nvmlInit_v2)
    timed("nvmlDeviceGetHandleByIndex_v2", lib.nvmlDeviceGetHandleByIndex_v2, 0, ctypes.byref(h))
    timed("nvmlDeviceGetPowerUsage", lib.nvmlDeviceGetPowerUsage, h, ctypes.byref(u))
    timed("nvmlDeviceGetUtilizationRates", lib.nvmlDeviceGetUtilizationRates, h, util)
    timed("nvmlDeviceGetTemperature", lib.nvmlDeviceGetTemperature, h, 0, ctypes.byref(u))
    timed("nvmlDeviceGetCurrentClocksThrottleReasons",
          lib.nvmlDeviceGetCurrentClocksThrottleReasons, h, ctypes.byref(ull))
    timed("nvmlDeviceGetTotalEnergyConsumption",
          lib.nvmlDeviceGetTotalEnergyConsumption, h, ctypes.byref(ull))
    timed("nvmlShutdown", lib.nvmlShutdown)


class FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", ctypes.c_ulonglong)]


lib.nvmlInit_v2()
lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
fv = FieldValue(fieldId=83)
same = 0
for _ in range(5 * n):
    timed("polled: nvmlDeviceGetTotalEnergyConsumption", lib.nvmlDeviceGetTotalEnergyConsumption, h, ctypes.byref(ull))
    rc = timed("polled: nvmlDeviceGetFieldValues(energy)", lib.nvmlDeviceGetFieldValues, h, 1, ctypes.byref(fv))
    same += rc == 0 and fv.nvmlReturn == 0 and abs(fv.value - ull.value) < 1000
    time.sleep(0.005)
lib.nvmlShutdown()
print(f"field value within 1 J of the call's: {same} of {5 * n}")
for name, v in times.items():
    print(f"{name:45s} median {statistics.median(v):8.3f} ms  max {max(v):8.3f} ms  (n={len(v)})")
