#!/usr/bin/env python3
"""How often NVML's three power figures move on this GPU, and what a read of each costs: the
energy counter (`nvmlDeviceGetTotalEnergyConsumption`), the instant power field
(`NVML_FI_DEV_POWER_INSTANT` through `nvmlDeviceGetFieldValues`, with the driver's own timestamp
of each value) and `nvmlDeviceGetPowerUsage`. A separate process loads the GPU in bursts
(0.3 s of matmuls, 0.3 s idle) so that power changes often; this process imports no torch and
polls every POLL_MS (2) for SECONDS (4). It prints, for each figure, the reads, the distinct
values, the spacing of its changes, the microseconds a read takes, and the energy over the same
window from the counter and from each power figure integrated over time.

    python3 bench/nvml_power_granularity.py [SECONDS] [POLL_MS]
"""
import ctypes, statistics, subprocess, sys, time

import nvml_gpu

seconds, poll = nvml_gpu.seconds_and_poll(4.0, 2.0)
nvml, dev = nvml_gpu.first_gpu()


class Field(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint),
                ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong),
                ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", ctypes.c_ulonglong)]


POWER_INSTANT = 186


def energy_j():
    return nvml_gpu.energy_j(nvml, dev)


def instant_w():
    f = Field(fieldId=POWER_INSTANT)
    rc = nvml.nvmlDeviceGetFieldValues(dev, 1, ctypes.byref(f))
    if rc != 0 or f.nvmlReturn != 0:
        return None, None
    # The value's type is the driver's: unsigned int (valueType 1) or unsigned long long.
    raw = f.value & 0xFFFFFFFF if f.valueType in (1,) else f.value
    return raw / 1000, f.timestamp


def usage_w():
    v = ctypes.c_uint()
    assert nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(v)) == 0
    return v.value / 1000


LOAD = r"""
import time, torch
a = torch.randn(8192, 8192, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
end = time.time() + float(__import__("sys").argv[1])
while time.time() < end:
    t = time.time()
    while time.time() - t < 0.3:
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
    time.sleep(0.3)
"""
load = subprocess.Popen([sys.executable, "-c", LOAD, str(seconds + 3)], stdout=subprocess.PIPE, text=True)
assert load.stdout.readline().strip() == "ready"
time.sleep(0.5)
rows = []  # (t, energy J, instant W, instant driver timestamp µs, usage W)
cost = {"energy": [], "instant": [], "usage": []}
t0 = time.perf_counter()
while time.perf_counter() - t0 < seconds:
    a = time.perf_counter(); e = energy_j()
    b = time.perf_counter(); w, ts = instant_w()
    c = time.perf_counter(); u = usage_w()
    d = time.perf_counter()
    cost["energy"].append(b - a); cost["instant"].append(c - b); cost["usage"].append(d - c)
    rows.append((a, e, w, ts, u))
    time.sleep(poll)
load.kill()


def changes(i):
    out = [rows[0]]
    for r in rows[1:]:
        if r[i] != out[-1][i]:
            out.append(r)
    return out


span = rows[-1][0] - rows[0][0]
print(f"{len(rows)} polls over {span:.2f} s (every {poll * 1000:.0f} ms asked)")
for name, i in (("energy counter", 1), ("instant power field", 2), ("power usage", 4)):
    ch = changes(i)
    gaps = [(b[0] - a[0]) * 1000 for a, b in zip(ch, ch[1:])]
    key = {1: "energy", 2: "instant", 4: "usage"}[i]
    line = (f"{name}: {len(ch) - 1} changes, read {statistics.median(cost[key]) * 1e6:.0f} µs "
            f"(p95 {sorted(cost[key])[int(len(cost[key]) * 0.95)] * 1e6:.0f})")
    if gaps:
        line += f", spacing median {statistics.median(gaps):.1f} ms (min {min(gaps):.1f}, max {max(gaps):.1f})"
    print(line)
stamps = sorted({r[3] for r in rows if r[3]})
if len(stamps) > 1:
    g = [(b - a) / 1000 for a, b in zip(stamps, stamps[1:])]
    print(f"instant field's own timestamps: {len(stamps)} distinct, spacing median {statistics.median(g):.1f} ms "
          f"(min {min(g):.1f}, max {max(g):.1f})")
# Energy over the window: the counter's rise against each power figure integrated (trapezoids).
counter = rows[-1][1] - rows[0][1]
for name, i in (("instant power", 2), ("power usage", 4)):
    pts = [(r[0], r[i]) for r in rows if r[i] is not None]
    integral = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:]))
    print(f"energy over {span:.2f} s: counter {counter:.1f} J, {name} × time {integral:.1f} J "
          f"(ratio {integral / counter:.3f})" if counter else f"{name}: counter did not move")
# Short windows, as a sweep point's: 0.25 s slices, the counter's rise against instant power × time.
ratios = []
k = 0
while True:
    a = rows[0][0] + k * 0.25
    sl = [r for r in rows if a <= r[0] < a + 0.25]
    if not sl or a + 0.25 > rows[-1][0]:
        break
    c = sl[-1][1] - sl[0][1]
    pts = [(r[0], r[2]) for r in sl if r[2] is not None]
    integ = sum((q[0] - p[0]) * (p[1] + q[1]) / 2 for p, q in zip(pts, pts[1:]))
    if c > 0 and integ > 0:
        ratios.append(integ / c)
    k += 1
if ratios:
    print(f"0.25 s windows: instant × time / counter, median {statistics.median(ratios):.3f}, "
          f"min {min(ratios):.3f}, max {max(ratios):.3f} over {len(ratios)}")
