#!/usr/bin/env python3
"""How long a CUDA process takes to give its device memory back once killed (issue 38: the
start at the largest batch took 5.3 s between "stopping the command" and the next start's gate).
For each size: a child allocates SIZE GiB on cuda:0 (and runs one matmul), is SIGKILLed, and the
parent times (1) the kill to the child's exit (waitpid), (2) the kill to the moment
`nvidia-smi --query-compute-apps` lists it no more, (3) the kill to NVML's used memory back
within 1 GiB of where it was before the child started.

    python3 bench/release_time.py 8 32 120
"""
import ctypes, os, signal, subprocess, sys, time

CHILD = r"""
import sys, torch
n = int(float(sys.argv[1]) * 2**30)
x = torch.empty(n, dtype=torch.uint8, device="cuda")
x.fill_(1)
a = torch.randn(4096, 4096, device="cuda"); (a @ a).sum().item()
torch.cuda.synchronize()
print("ready", flush=True)
import time; time.sleep(600)
"""

nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0


class Mem(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def used():
    m = Mem()
    assert nvml.nvmlDeviceGetMemoryInfo(dev, ctypes.byref(m)) == 0
    return m.used


def listed(pid):
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout
    return str(pid) in out.split()


t = time.perf_counter()
listed(0)
print(f"one nvidia-smi --query-compute-apps call: {(time.perf_counter() - t) * 1000:.0f} ms")
for size in sys.argv[1:] or ["8", "32"]:
    before = used()
    c = subprocess.Popen([sys.executable, "-c", CHILD, size], stdout=subprocess.PIPE, text=True)
    assert c.stdout.readline().strip() == "ready"
    held = used() - before
    k = time.perf_counter()
    os.kill(c.pid, signal.SIGKILL)
    c.wait()
    exited = time.perf_counter() - k
    gone_list = freed = None
    while gone_list is None or freed is None:
        now = time.perf_counter() - k
        if freed is None and used() - before < 2**30:
            freed = now
        if gone_list is None and not listed(c.pid):
            gone_list = time.perf_counter() - k
        if now > 60:
            break
        time.sleep(0.01)
    print(f"{size} GiB (held {held / 2**30:.1f} GiB): exit {exited:.2f} s, memory back {freed:.2f} s, "
          f"unlisted by nvidia-smi {gone_list:.2f} s after the kill")
