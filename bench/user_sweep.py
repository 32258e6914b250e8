#!/usr/bin/env python3
"""`headroom run --sweep batch=auto` on a typical resnet50 training script, side by side in one run
with accelerate's `find_executable_batch_size` inside the same script and Lightning's
`Tuner.scale_batch_size` on the same model: wall time to each one's answer, and what the answer
holds. Also where headroom's seconds go, start by start (the sweep's --json document).

    python3 bench/user_sweep.py --headroom dist/headroom --python python3 --out DIR

The training script (written to DIR/train.py) is a plain loop: torchvision resnet50, synthetic
224² images made per item in a Dataset, DataLoader with 6 workers, AdamW, bf16 autocast off; no
Headroom markers.
"""
import argparse, json, os, subprocess, sys, time

TRAIN = r'''
import argparse, torch, torchvision
from torch.utils.data import DataLoader, Dataset
p = argparse.ArgumentParser()
p.add_argument("--bs", type=int, default=64)
p.add_argument("--steps", type=int, default=1000000)
p.add_argument("--find", choices=["none", "accelerate"], default="none")
a = p.parse_args()

class Synthetic(Dataset):
    def __init__(self, n): self.n = n
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 224, 224, generator=g), i % 1000

def train(bs, steps):
    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = DataLoader(Synthetic(bs * 64), batch_size=bs, num_workers=6, shuffle=True, drop_last=True,
                    persistent_workers=True)
    n = 0
    while n < steps:
        for x, y in dl:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            n += 1
            if n >= steps:
                break
    torch.cuda.synchronize()

if a.find == "accelerate":
    from accelerate.utils import find_executable_batch_size
    @find_executable_batch_size(starting_batch_size=a.bs)
    def go(batch_size):
        train(batch_size, 3)
        return batch_size
    print("accelerate found", go(), flush=True)
else:
    train(a.bs, a.steps)
'''

LIGHTNING = r'''
import torch, torchvision, lightning as L
from torch.utils.data import DataLoader, Dataset
from lightning.pytorch.tuner import Tuner
class Synthetic(Dataset):
    def __init__(self, n): self.n = n
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 224, 224, generator=g), i % 1000
class M(L.LightningModule):
    def __init__(self, batch_size=16):
        super().__init__(); self.batch_size = batch_size; self.net = torchvision.models.resnet50()
    def training_step(self, b, i):
        x, y = b; return torch.nn.functional.cross_entropy(self.net(x), y)
    def configure_optimizers(self): return torch.optim.AdamW(self.parameters(), lr=1e-3)
    def train_dataloader(self):
        return DataLoader(Synthetic(max(self.batch_size, 1) * 8), batch_size=self.batch_size, num_workers=6)
m = M()
t = L.Trainer(accelerator="gpu", devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
              enable_progress_bar=False, enable_model_summary=False)
print("lightning found", Tuner(t).scale_batch_size(m, mode="power", steps_per_trial=3, init_val=16), flush=True)
'''

def timed(cmd, cwd, env=None):
    t = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return time.monotonic() - t, r

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", default="dist/headroom")
    ap.add_argument("--python", default="python3")
    ap.add_argument("--out", default="user-sweep-out")
    ap.add_argument("--parts", default="headroom,headroom-serial,accelerate,lightning")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    out = os.path.abspath(a.out)
    open(os.path.join(out, "train.py"), "w").write(TRAIN)
    open(os.path.join(out, "lightning_find.py"), "w").write(LIGHTNING)
    env = dict(os.environ, HEADROOM_HOME=os.path.join(out, "home"))
    res = {}
    rows = []
    for part in a.parts.split(","):
        if part in ("headroom", "headroom-serial"):
            # headroom: starts begun ahead (the default on CUDA); headroom-serial: one at a time.
            extra = ["--prestart", "off"] if part == "headroom-serial" else []
            s, r = timed([os.path.abspath(a.headroom), "run", "--sweep", "batch=auto", *extra, "--json", "--",
                          a.python, "train.py", "--bs", "{batch}"], out, env)
            n = sum(1 for k in res if k.startswith(part))
            key = f"{part}-{n + 1}"
            open(os.path.join(out, f"{key}.stderr"), "w").write(r.stderr)
            doc = json.loads(r.stdout) if r.returncode in (0, 3) and r.stdout.strip() else None
            res[key] = {"seconds": s, "rc": r.returncode, "doc": doc}
            summ = (doc or {}).get("sweep", {}).get("summary") or {}
            pts = (doc or {}).get("sweep", {}).get("points") or []
            how = "starts one at a time" if extra else "next start begun ahead"
            rows.append((f"headroom batch=auto ({how})", s, f"recommended {summ.get('recommended_batch')} · knee {summ.get('knee_batch')} · largest verified {summ.get('max_fit_batch')} · {len(pts)} points, each with samples/s and GPU peak"))
            for t in (doc or {}).get("seconds", []):
                b, secs, first, waited = t["batch"], t["seconds"], t.get("first_step_s"), t.get("waited_s")
                p = next((p for p in pts if p["batch"] == b), {})
                ahead = "" if waited is None else f" · waited {waited:.1f} s at its gate"
                rows.append((f"  start at batch {b}", secs, f"first step after {first if first is None else round(first, 1)} s{ahead} · {p.get('status')} · {p.get('samples_per_s') and round(p['samples_per_s'])} samples/s · peak {p.get('peak_bytes') and round(p['peak_bytes'] / 2**30, 1)} GiB"))
        elif part == "amp":
            # Mixed precision on the same script with no code change: the observer runs its
            # forward passes under bf16 autocast or with the same hooks and none, 60 steps each
            # at batch 128; then what `decide` makes of the pair.
            s, r = timed([os.path.abspath(a.headroom), "run", "--sweep", "amp=off,bf16", "--steps", "60",
                          "--json", "--", a.python, "train.py", "--bs", "128"], out, env)
            open(os.path.join(out, "amp.stderr"), "w").write(r.stderr)
            doc = json.loads(r.stdout) if r.stdout.strip().startswith("[") else []
            _, d = timed([os.path.abspath(a.headroom), "decide", "--json"], out, env)
            dec = json.loads(d.stdout) if d.stdout.strip().startswith("{") else {}
            reason = next((x["text"] for x in dec.get("decision", {}).get("reasons", []) if x["rule"] == "mixed_precision"), None)
            res["amp"] = {"seconds": s, "rc": r.returncode, "runs": doc, "reason": reason}
            for row in doc:
                o = row["run"]
                ob = o.get("observed") or {}
                rows.append((f"  amp {row['combination']}", o["seconds"], f"{o.get('samples_per_s') and round(o['samples_per_s'])} samples/s · p50 {o.get('step_ms_p50') and round(o['step_ms_p50'], 1)} ms · GPU peak {ob.get('peak_device_bytes') and round(ob['peak_device_bytes'] / 2**30, 2)} GiB · autocast {ob.get('autocast')}"))
            rows.append(("headroom run --sweep amp=off,bf16 (60 steps each)", s, f"decide: {reason}"))
        elif part == "accelerate":
            s, r = timed([a.python, "train.py", "--bs", "4096", "--find", "accelerate"], out)
            found = [l for l in r.stdout.splitlines() if "found" in l]
            res["accelerate"] = {"seconds": s, "rc": r.returncode, "found": found, "tail": r.stderr[-2000:]}
            rows.append(("accelerate find_executable_batch_size (from 4096)", s, (found or ["rc %d" % r.returncode])[0] + " · nothing else"))
        elif part == "lightning":
            s, r = timed([a.python, "lightning_find.py"], out)
            found = [l for l in r.stdout.splitlines() if "found" in l]
            res["lightning"] = {"seconds": s, "rc": r.returncode, "found": found, "tail": r.stderr[-2000:]}
            rows.append(("Lightning scale_batch_size (power, 3 steps/trial)", s, (found or ["rc %d" % r.returncode])[0] + " · nothing else"))
    json.dump(res, open(os.path.join(out, "user_sweep.json"), "w"), indent=1)
    print("| what | wall s | answer |\n|---|---:|---|")
    for name, s, ans in rows:
        print(f"| {name} | {s:.1f} | {ans} |")

if __name__ == "__main__":
    main()
