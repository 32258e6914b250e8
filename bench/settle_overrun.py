#!/usr/bin/env python3
"""How far a user-sweep start runs past the moment its step time settled: a CPU training loop
(small MLP, SGD, about 4 ms a step) that stamps each step to a file, swept with `batch=auto` up to 256
with the observer sending what it buffered every 0.25 s (`HEADROOM_FLUSH_S=0.25`, as before)
and at the sweep's own setting, interleaved. Prints, per start, the steps the loop ran against
the steps Headroom had when it stopped it, and each sweep's wall time.

    python3 bench/settle_overrun.py --headroom dist/headroom [--rounds 3]
"""
import argparse, json, os, subprocess, sys, tempfile, time

LOOP = r'''
import sys, time, torch
b = int(sys.argv[1]); stamps = open(sys.argv[2], "a", buffering=1)
torch.set_num_threads(1)
m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(b, 256); y = torch.randint(0, 10, (b,))
n = 0
while True:
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
    n += 1
    stamps.write(f"{b} {n}\n")
'''

ap = argparse.ArgumentParser()
ap.add_argument("--headroom", required=True)
ap.add_argument("--python", default=sys.executable)
ap.add_argument("--rounds", type=int, default=3)
a = ap.parse_args()
work = tempfile.mkdtemp(prefix="overrun-")
loop = os.path.join(work, "loop.py")
open(loop, "w").write(LOOP)
rows = []
for r in range(a.rounds):
    for mode in ("0.25", "default"):
        stamps = os.path.join(work, f"stamps-{mode}-{r}")
        env = dict(os.environ, HEADROOM_HOME=os.path.join(work, "home"))
        if mode != "default":
            env["HEADROOM_FLUSH_S"] = mode
        t = time.time()
        p = subprocess.run([a.headroom, "run", "--sweep", "batch=auto", "--max-batch", "256", "--json", "--",
                            a.python, loop, "{batch}", stamps], capture_output=True, text=True, env=env)
        wall = time.time() - t
        doc = json.loads(p.stdout[p.stdout.index("{"):])
        ran = {}
        for line in open(stamps):
            b, n = map(int, line.split())
            ran[b] = max(ran.get(b, 0), n)
        for pt in doc["sweep"]["points"]:
            seen = (pt.get("warmup_steps") or 0) + (pt.get("timed_steps") or 0)
            rows.append((mode, r, pt["batch"], ran.get(pt["batch"]), seen, pt.get("step_ms_p50")))
        print(f"round {r} flush {mode}: {wall:.1f} s", flush=True)
print("| flush | round | batch | steps the loop ran | steps Headroom timed (warm-up + timed) | past them | p50 ms |")
print("|---|---:|---:|---:|---:|---:|---:|")
for mode, r, b, ran, seen, p50 in rows:
    print(f"| {mode} | {r} | {b} | {ran} | {seen} | {ran - seen if ran else ''} | {p50:.2f} |")
