#!/usr/bin/env python3
"""Issue 38 on the GPU host: `headroom run --sweep batch=auto` of an ImageNet-example-shaped
script (torchvision resnet50, FakeData through a DataLoader with 12 workers, `-b {batch}`, SGD
with momentum, an AverageMeter-style `Time` meter), three times; what each sweep measured, its
warnings and its wall time. Also: Headroom's samples/s against the script's own timer on one
plain `headroom run`, the cost of a start waiting at its gate (a two-batch sweep with and without
a start begun ahead, 8 workers, interleaved), and what `decide` says after them.

    python3 bench/imagenet_sweep.py --headroom dist/headroom --python python3 --out DIR
"""
import argparse, json, os, subprocess, sys, time

TRAIN = r'''
import argparse, time, torch, torchvision
from torch import nn
import torchvision.transforms as T
p = argparse.ArgumentParser()
p.add_argument("-b", "--batch-size", type=int, default=256)
p.add_argument("-j", "--workers", type=int, default=12)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--iters", type=int, default=1000000)
p.add_argument("--print-freq", type=int, default=10)
a = p.parse_args()

class Meter:
    def __init__(s): s.n = 0; s.sum = 0.0; s.val = 0.0
    def update(s, v): s.val = v; s.sum += v; s.n += 1
    @property
    def avg(s): return s.sum / max(s.n, 1)

tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
data = torchvision.datasets.FakeData(size=a.batch_size * min(a.iters, 200), image_size=(3, 256, 256), transform=tf)
loader = torch.utils.data.DataLoader(data, batch_size=a.batch_size, shuffle=True, num_workers=a.workers, pin_memory=True)
model = torchvision.models.resnet50().cuda()
criterion = nn.CrossEntropyLoss().cuda()
opt = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
first = last = None; samples = 0; done = 0
for epoch in range(a.epochs):
    batch_time = Meter(); end = time.time()
    for i, (images, target) in enumerate(loader):
        images = images.cuda(non_blocking=True); target = target.cuda(non_blocking=True)
        loss = criterion(model(images), target)
        opt.zero_grad(); loss.backward(); opt.step()
        torch.cuda.synchronize()
        now = time.perf_counter()
        if first is None: first = now
        else: samples += images.size(0)
        last = now; done += 1
        batch_time.update(time.time() - end); end = time.time()
        if i % a.print_freq == 0:
            print(f"Epoch: [{epoch}][{i:4d}/{len(loader)}]\tTime {batch_time.val:6.3f} ({batch_time.avg:6.3f})\tLoss {loss.item():.4f}", flush=True)
        if done >= a.iters: break
    if done >= a.iters: break
print(f"own: iterations {done} samples/s {samples / (last - first):.3f}", flush=True)
'''


class Done:
    def __init__(self, returncode, stdout, stderr, stamped):
        self.returncode, self.stdout, self.stderr, self.stamped = returncode, stdout, stderr, stamped


def run(cmd, env=None):
    """The command's output, and its stderr with each line's seconds since the start (where a
    sweep's time goes: each start's lines, its first step, its stop)."""
    import threading
    t = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    err = []
    def read():
        for line in p.stderr:
            err.append((time.time() - t, line))
    th = threading.Thread(target=read); th.start()
    out = p.stdout.read()
    p.wait(); th.join()
    stamped = "".join(f"{at:7.2f} {line}" for at, line in err)
    return Done(p.returncode, out, "".join(l for _, l in err), stamped), time.time() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", required=True)
    ap.add_argument("--python", default="python3")
    ap.add_argument("--out", required=True)
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--only-sweeps", action="store_true", help="the sweeps alone (no timer run, no waiting rounds, no decide)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    script = os.path.join(a.out, "train.py")
    open(script, "w").write(TRAIN)
    env = dict(os.environ, HEADROOM_HOME=os.path.join(a.out, "home"))
    hr = os.path.abspath(a.headroom)
    results = {}

    # 1. One run against the script's own timer.
    if a.only_sweeps:
        return sweeps(a, hr, script, env, results)
    p, wall = run([hr, "run", "--json", "--", a.python, script, "-b", "256", "--iters", "120"], env)
    own = [l for l in p.stderr.splitlines() if "own: " in l]
    v = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    mine = v.get("samples_per_s")
    theirs = float(own[-1].split()[-1]) if own else None
    results["timer"] = {"headroom": mine, "own": theirs, "steps": v.get("steps"), "batch": v.get("batch"),
                        "rc": p.returncode, "wall_s": wall}
    print(f"timer: headroom {mine} samples/s, script's own {theirs}; steps {v.get('steps')} batch {v.get('batch')}", flush=True)

    sweeps(a, hr, script, env, results)
    waiting(a, hr, script, env, results)


def sweeps(a, hr, script, env, results):
    # 2. batch=auto, three times.
    results["sweeps"] = []
    for k in range(a.sweeps):
        p, wall = run([hr, "run", "--json", "--sweep", "batch=auto", "--", a.python, script,
                       "-b", "{batch}", "--workers", "12"], env)
        open(os.path.join(a.out, f"sweep{k}.json"), "w").write(p.stdout)
        open(os.path.join(a.out, f"sweep{k}.err"), "w").write(p.stamped)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {}
        sw = doc.get("sweep", {})
        pts = [(q.get("batch"), q.get("status"), q.get("samples_per_s"), q.get("peak_bytes"), q.get("message"))
               for q in sw.get("points", [])]
        warn = sw.get("warnings", [])
        s = sw.get("summary", {})
        row = {"wall_s": wall, "rc": p.returncode, "points": pts, "knee": s.get("knee_batch"),
               "recommended": s.get("recommended_batch"), "still_rising": s.get("still_rising"),
               "other_load_warnings": [w for w in warn if "used" in w and "cores" in w],
               "warnings": warn}
        results["sweeps"].append(row)
        print(f"sweep {k}: {wall:.1f} s rc {p.returncode} knee {row['knee']} recommended {row['recommended']}", flush=True)
        for q in pts:
            print(f"   batch {q[0]} {q[1]} {q[2]} peak {q[3]} {q[4] or ''}", flush=True)
        for w in warn:
            print(f"   warning: {w}", flush=True)
        # Where each start's seconds went (begun ahead or cold; to its first step; released).
        for t in doc.get("seconds", []):
            print(f"   start {t.get('batch')}: {t.get('seconds', 0):.1f} s, first step "
                  f"{t.get('first_step_s') or 0:.1f} s, waited {t.get('waited_s') or 0:.1f} s, "
                  f"ahead {t.get('ahead')}, released {t.get('release_s') or 0:.1f} s, "
                  f"device free {t.get('device_free_s') or 0:.1f} s", flush=True)
        print(f"   predicted fit {s.get('predicted_fit_batch')}", flush=True)

    json.dump(results, open(os.path.join(a.out, "imagenet_sweep.json"), "w"), indent=1)


def waiting(a, hr, script, env, results):
    # 3. A start waiting at its gate: batch=auto up to 64 (16 is timed while 64 waits at its
    # gate, stopped whole while 16 is timed), and the same with no start begun ahead; 8 workers.
    results["waiting"] = []
    for rnd in range(2):
        for mode in ("on", "off"):
            p, wall = run([hr, "run", "--json", "--sweep", "batch=auto", "--max-batch", "64",
                           "--prestart", mode, "--", a.python, script, "-b", "{batch}",
                           "--workers", "8"], env)
            try:
                doc = json.loads(p.stdout)
                pts = {q["batch"]: q.get("samples_per_s") for q in doc["sweep"]["points"]}
            except Exception:
                pts = {}
            results["waiting"].append({"round": rnd, "prestart": mode, "b16": pts.get(16), "b64": pts.get(64), "wall_s": wall})
            print(f"waiting {mode} round {rnd}: batch 16 {pts.get(16)} samples/s, 64 {pts.get(64)}, {wall:.1f} s", flush=True)

    p, _ = run([hr, "decide", "--json"], env)
    try:
        d = json.loads(p.stdout)
        results["decide"] = d.get("headline") or d.get("decision", {}).get("headline")
    except ValueError:
        results["decide"] = p.stdout[-500:]
    print(f"decide: {results['decide']}", flush=True)
    json.dump(results, open(os.path.join(a.out, "imagenet_sweep.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
