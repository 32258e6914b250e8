#!/usr/bin/env python3
"""Is NVML's energy counter late at its updates, or irregular in what it counts? (issue 42)

A separate process keeps the GPU at a steady load (matmuls, no gaps) for SECONDS (8); this one
imports no torch and polls the energy counter every POLL_MS (1), stamping each change with the
time before and after the read. Then, over every window of K (2, 3, 5) update intervals it
compares two figures for the window's power against the mean power of the whole steady middle
(the counter's rise over its time, several seconds): the rise over the seen time between the
window's first and last update (what Headroom's `edge_watts` does), and the rise over K times the
counter's median spacing (right if the counter adds up fixed periods and only its updates come
late). It prints the spacing of the updates and, for each K, the share of windows within 5 % and
10 % of the steady power and the median error, for both figures.

    python3 bench/nvml_counter_steady.py [SECONDS] [POLL_MS]
"""
import statistics, subprocess, sys, time

import nvml_gpu

seconds, poll = nvml_gpu.seconds_and_poll(8.0, 1.0)
nvml, dev = nvml_gpu.first_gpu()


def counter():
    return nvml_gpu.energy_j(nvml, dev)


load = subprocess.Popen([sys.executable, "-c", f"""
import torch, time
a = torch.randn(8192, 8192, device='cuda'); b = torch.randn(8192, 8192, device='cuda')
end = time.time() + {seconds + 3}
while time.time() < end:
    for _ in range(8):
        a = (a @ b).clamp_(-1, 1)
    torch.cuda.synchronize()
"""])
time.sleep(3)  # torch, CUDA and the clocks up
edges, last = [], counter()
end = time.perf_counter() + seconds
while time.perf_counter() < end:
    t0 = time.perf_counter()
    e = counter()
    t1 = time.perf_counter()
    if e != last:
        edges.append(((t0 + t1) / 2, e))
        last = e
    time.sleep(poll)
load.wait()
sp = [b[0] - a[0] for a, b in zip(edges, edges[1:])]
q = sorted(sp)
period = statistics.median(sp)
steady = (edges[-1][1] - edges[0][1]) / (edges[-1][0] - edges[0][0])
print(f"{len(edges)} updates in {seconds:.0f} s; spacing ms: min {q[0]*1e3:.1f}, p5 {q[len(q)//20]*1e3:.1f}, "
      f"median {period*1e3:.1f}, p95 {q[-len(q)//20-1]*1e3:.1f}, max {q[-1]*1e3:.1f}; steady power {steady:.1f} W")
rises = [b[1] - a[1] for a, b in zip(edges, edges[1:])]
print(f"per interval: rise/spacing CV {statistics.pstdev([r/s for r, s in zip(rises, sp)]) / steady:.3f}, "
      f"rise/median spacing CV {statistics.pstdev([r/period for r in rises]) / steady:.3f}")
for k in (2, 3, 5):
    seen, fixed = [], []
    for i in range(len(edges) - k):
        a, b = edges[i], edges[i + k]
        seen.append((b[1] - a[1]) / (b[0] - a[0]) / steady - 1)
        fixed.append((b[1] - a[1]) / (k * period) / steady - 1)
    for name, errs in (("over the seen time", seen), ("over K median spacings", fixed)):
        within = lambda x: sum(abs(e) <= x for e in errs) / len(errs)
        print(f"K={k} {name:24s}: within 5 % {within(0.05):.2f}, within 10 % {within(0.10):.2f}, "
              f"median |error| {statistics.median(abs(e) for e in errs)*100:.1f} %, max {max(abs(e) for e in errs)*100:.1f} %")
