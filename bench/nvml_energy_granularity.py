#!/usr/bin/env python3
"""How often NVML's energy counter moves on this GPU: polls
`nvmlDeviceGetTotalEnergyConsumption` every millisecond for a few seconds while a matmul loop
keeps the GPU busy, and prints the spacing of its changes and the power each change implies
beside `nvmlDeviceGetPowerUsage`. A span shorter than a few of those spacings cannot have its
joules from the counter's ends alone.

    python3 bench/nvml_energy_granularity.py [SECONDS]
"""
import ctypes, statistics, sys, threading, time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0


def energy_mj():
    v = ctypes.c_ulonglong()
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(v)) == 0
    return v.value


def power_mw():
    v = ctypes.c_uint()
    assert nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(v)) == 0
    return v.value


stop = False


def load():
    import torch
    a = torch.randn(8192, 8192, device="cuda")
    while not stop:
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()


th = threading.Thread(target=load)
th.start()
time.sleep(1.5)
changes, powers = [], []
last = energy_mj()
t0 = time.perf_counter()
calls = 0
while time.perf_counter() - t0 < seconds:
    e = energy_mj()
    calls += 1
    now = time.perf_counter()
    if e != last:
        changes.append((now, e - last))
        last = e
        powers.append(power_mw() / 1000)
    time.sleep(0.001)
# The reference the energy checks integrate: nvidia-smi's instant power, asked for every 10 ms
# over the same load — how often does it change?
import subprocess
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw.instant", "--format=csv,noheader,nounits",
                        "-lms", "10"], stdout=subprocess.PIPE, text=True)
smi_rows = []
t1 = time.perf_counter()
for line in smi.stdout:
    now = time.perf_counter()
    try:
        smi_rows.append((now, float(line.strip())))
    except ValueError:
        pass
    if now - t1 > seconds:
        break
smi.kill()
stop = True
th.join()
moved = [smi_rows[0]] + [b for a, b in zip(smi_rows, smi_rows[1:]) if b[1] != a[1]] if smi_rows else []
smi_gaps = [b[0] - a[0] for a, b in zip(moved, moved[1:])]
print(f"nvidia-smi -lms 10: {len(smi_rows)} lines in {seconds:.1f} s, the value changed {len(moved) - 1} times"
      + (f" (median spacing {statistics.median(smi_gaps) * 1000:.0f} ms, min {min(smi_gaps) * 1000:.0f}, max {max(smi_gaps) * 1000:.0f})" if smi_gaps else ""))
gaps = [b[0] - a[0] for a, b in zip(changes, changes[1:])]
implied = [d / 1000 / g for (_, d), g in zip(changes[1:], gaps)]
took = (time.perf_counter() - t0) / max(calls, 1)
print(f"{calls} reads over {seconds:.1f} s ({took * 1e6:.0f} µs each with the sleep); {len(changes)} changes")
if gaps:
    print(f"spacing of changes: median {statistics.median(gaps) * 1000:.1f} ms, min {min(gaps) * 1000:.1f}, max {max(gaps) * 1000:.1f}")
    print(f"power implied by each change: median {statistics.median(implied):.0f} W (min {min(implied):.0f}, max {max(implied):.0f}); "
          f"nvmlDeviceGetPowerUsage median {statistics.median(powers):.0f} W")
    total = (changes[-1][0] - changes[0][0])
    print(f"counter over {total:.2f} s: {sum(d for _, d in changes[1:]) / 1000 / total:.0f} W")
