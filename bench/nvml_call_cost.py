#!/usr/bin/env python3
"""What NVML's calls cost the process that makes them (issue 42): nvmlInit_v2, a handle, each
reading the conditions sampler takes, the energy counter, and nvmlShutdown — timed through
ctypes on libnvidia-ml, N rounds (default 20), median and max in ms.

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
for name, v in times.items():
    print(f"{name:45s} median {statistics.median(v):8.3f} ms  max {max(v):8.3f} ms  (n={len(v)})")
