#!/usr/bin/env python3
"""bench/noise_spread.py DIR: what bench/noise_control.sh measured, per batch — Headroom's samples/s
in each quiet and loaded run beside PyTorch's own loop (torch_loop.py) run right after it, and the
spread between the quiet runs (half the range over the mean, the issue's "agree within ±5 %").
Loaded points: whether each carries a warning that names the load."""
import glob, json, os, sys

BATCHES = [1, 64, 256, 512]


def spread(xs):
    xs = [x for x in xs if x]
    if len(xs) < 2:
        return None
    mid = sum(xs) / len(xs)
    return 100 * (max(xs) - min(xs)) / 2 / mid


def runs(d, kind):
    out = []
    for f in sorted(glob.glob(os.path.join(d, f"{kind}*.json"))):
        v = json.load(open(f))
        pts = {p["batch"]: p for p in v.get("points", [])}
        ctl = {}
        tf = f[:-5] + ".torch.jsonl"
        if os.path.exists(tf):
            for line in open(tf):
                r = json.loads(line)
                ctl[r["batch"]] = r["samples_per_s"]
        s = v.get("summary") or {}
        out.append((os.path.basename(f)[:-5], pts, ctl, s, v))
    return out


def fmt(x):
    return "-" if not x else f"{x:.0f}"


d = sys.argv[1]
quiet, loaded = runs(d, "quiet"), runs(d, "loaded")
print("| run | threads | " + " | ".join(f"at {b}: Headroom / torch loop" for b in BATCHES)
      + " | recommended | uncertain | points warned of load |")
print("|---|---:|" + "---:|" * len(BATCHES) + "---|---|---:|")
for name, pts, ctl, s, v in quiet + loaded:
    cells = [f"{fmt((pts.get(b) or {}).get('samples_per_s'))} / {fmt(ctl.get(b))}" for b in BATCHES]
    rec = f"{s.get('recommended_batch')}{', still rising' if s.get('still_rising') else ''}"
    warned = sum(1 for p in pts.values() if p.get("load") and any("cores" in w for w in (v.get("warnings") or []) if f"batch {p['batch']} " in w))
    print(f"| {name} | {(v.get('hello') or {}).get('threads')} | " + " | ".join(cells)
          + f" | {rec} | {'yes' if s.get('uncertain') else 'no'} | {warned} of {len(pts)} |")
print()
print("| spread between the quiet runs (± half the range) | " + " | ".join(f"at {b}" for b in BATCHES) + " |")
print("|---|" + "---:|" * len(BATCHES))
for label, pick in [("Headroom", lambda r, b: (r[1].get(b) or {}).get("samples_per_s")),
                    ("torch loop, right after", lambda r, b: r[2].get(b))]:
    row = []
    for b in BATCHES:
        sp = spread([pick(r, b) for r in quiet])
        row.append("-" if sp is None else f"±{sp:.1f} %")
    print(f"| {label} | " + " | ".join(row) + " |")
