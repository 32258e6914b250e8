#!/usr/bin/env python3
"""What Headroom's observer (the sitecustomize `headroom run` puts on a Python child's path) costs
a training script: the same script, run three ways and interleaved round by round —

  plain     python train.py                               (no Headroom at all)
  wrapped   headroom run --no-instrument -- python ...    (the sampler outside, no observer)
  observed  headroom run -- python ...                    (the observer inside)

The script times its own steps (perf_counter around each loop iteration, a device synchronise
before each reading, warm-up steps left out) and prints the median step time on its last line;
nothing of Headroom's measures it. The observer's cost is observed / wrapped, the whole wrapper's
observed / plain. A resnet50 from torchvision when it is installed (`--model resnet50`), else a
small built-in CNN (`--model convnet`, for a CPU with two cores). `--model tiny` (a linear layer on
1-pixel images, batch 1) leaves only the loop's own cost, so observed − wrapped is the observer's
cost per optimizer step in microseconds, a figure the noise of a shared machine hides less.

    python bench/observer_overhead.py --headroom target/release/headroom --device cpu \\
        --model convnet --batch 32 --image 64 --steps 60 --rounds 5
    python3 bench/observer_overhead.py --headroom dist/headroom --python python3 --device cuda \\
        --model resnet50 --batch 128 --workers 6 --steps 150 --rounds 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

TRAIN = r'''
import argparse, json, statistics, time
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--device", default="cpu")
p.add_argument("--model", default="convnet")
p.add_argument("--batch", type=int, default=32)
p.add_argument("--image", type=int, default=64)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--threads", type=int, default=0)
a = p.parse_args()
dev = torch.device(a.device)
if a.threads:
    torch.set_num_threads(a.threads)


class Images(Dataset):
    """Synthetic images from a fixed pool (the loader's work stays small and steady)."""

    def __init__(self, n, size):
        g = torch.Generator().manual_seed(0)
        self.pool = torch.randn(64, 3, size, size, generator=g)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.pool[i % 64], i % 10


if a.model == "resnet50":
    import torchvision
    model = torchvision.models.resnet50(num_classes=10)
elif a.model == "tiny":
    # Almost no work per step: the step time is then the loop's own cost, and the difference
    # between observed and wrapped is the observer's cost per step in absolute time.
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * a.image * a.image, 10))
else:
    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2))
    model = nn.Sequential(block(3, 32), block(32, 64), block(64, 128), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(128, 10))
model = model.to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
total = a.steps + a.warmup
loader = DataLoader(Images(total * a.batch, a.image), batch_size=a.batch, shuffle=False,
                    num_workers=a.workers, pin_memory=dev.type == "cuda",
                    persistent_workers=a.workers > 0)


def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize()


times = []
sync()
last = time.perf_counter()
for i, (x, y) in enumerate(loader):
    x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sync()
    now = time.perf_counter()
    if i >= a.warmup:
        times.append((now - last) * 1e3)
    last = now
print("OVERHEAD " + json.dumps({"median_ms": statistics.median(times), "steps": len(times)}), flush=True)
'''


def run(cmd, env):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("OVERHEAD "):
            return json.loads(line[len("OVERHEAD "):])["median_ms"]
    sys.exit(f"no result from {' '.join(cmd)} (exit {out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--headroom", default="target/release/headroom")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--model", default="convnet")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads in the script (0: torch's default)")
    ap.add_argument("--out", help="write the raw figures here as JSON")
    ap.add_argument("--observe-json", help="then run it once more with `headroom run --json` and keep the document here")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="headroom-overhead-")
    script = os.path.join(work, "train.py")
    with open(script, "w") as f:
        f.write(TRAIN)
    env = dict(os.environ, HEADROOM_HOME=os.path.join(work, "home"))
    args = [a.python, script, "--device", a.device, "--model", a.model, "--batch", str(a.batch),
            "--image", str(a.image), "--workers", str(a.workers), "--steps", str(a.steps), "--threads", str(a.threads)]
    modes = {
        "plain": args,
        "wrapped": [a.headroom, "run", "--no-instrument", "--"] + args,
        "observed": [a.headroom, "run", "--"] + args,
    }
    figures = {m: [] for m in modes}
    for r in range(a.rounds):
        # Rotate the order each round so no mode always runs first (a warm page cache, turbo).
        order = list(modes)[r % 3:] + list(modes)[: r % 3]
        for m in order:
            figures[m].append(run(modes[m], env))
        print(f"round {r + 1}: " + ", ".join(f"{m} {figures[m][-1]:.2f} ms" for m in modes), file=sys.stderr)
    med = {m: statistics.median(v) for m, v in figures.items()}
    print(f"| {a.model} on {a.device}, batch {a.batch}, {a.image}², workers {a.workers}, "
          f"{a.steps} timed steps × {a.rounds} rounds, threads {a.threads or 'default'} | median step ms |")
    print("|---|---:|")
    for m in modes:
        print(f"| {m} | {med[m]:.2f} ({', '.join(f'{x:.2f}' for x in figures[m])}) |")
    print(f"| observer's cost (observed / wrapped) | {med['observed'] / med['wrapped']:.4f} |")
    print(f"| the whole wrapper's (observed / plain) | {med['observed'] / med['plain']:.4f} |")
    print(f"| observed − wrapped per step | {(med['observed'] - med['wrapped']) * 1e3:.1f} µs |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"args": vars(a), "figures": figures, "median": med}, f, indent=1)
    if a.observe_json:
        out = subprocess.run([a.headroom, "run", "--json", "--"] + args, capture_output=True,
                             text=True, env=env, check=False)
        with open(a.observe_json, "w") as f:
            f.write(out.stdout)
        doc = json.loads(out.stdout)
        o = doc.get("observed") or {}
        print(f"\nobserved ({a.observe_json}): exit {doc.get('exit_code')}, {o.get('steps')} steps at batch "
              f"{o.get('batch')} on {o.get('device')}, p50 {doc.get('step_ms_p50')} ms, "
              f"{doc.get('samples_per_s')} samples/s, data share {doc.get('data_share')}, "
              f"device peak {o.get('peak_device_bytes')} B (cached {o.get('peak_device_cached_bytes')} B), "
              f"loader {o.get('loader')}, epochs {len(doc.get('epochs') or [])}")


if __name__ == "__main__":
    main()
