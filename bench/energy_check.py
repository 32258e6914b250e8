#!/usr/bin/env python3
"""The tables of `bench/h200_energy_profile.sh`'s output folder: Headroom's NVML joules per
sample against `nvidia-smi`'s power × time over the same steps, the conditions sampler's cost
on a sweep's wall time, and what a profiler window costs a run.

    python3 bench/energy_check.py OUT
"""
import json, statistics, sys
from pathlib import Path

out = Path(sys.argv[1])


def power():
    """(time, watts) from nvidia-smi, instant power where the driver gives it."""
    rows = []
    for line in (out / "power.txt").read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        try:
            t = float(parts[0])
        except ValueError:
            continue
        for v in parts[1:]:
            try:
                rows.append((t, float(v)))
                break
            except ValueError:
                continue
    return rows


def integrate(rows, a, b):
    """Joules from a to b: the power samples inside, held until the next one (trapezoids)."""
    inside = [(t, w) for t, w in rows if a <= t <= b]
    before = [(t, w) for t, w in rows if t < a][-1:]
    after = [(t, w) for t, w in rows if t > b][:1]
    pts = before + inside + after
    j = 0.0
    for (t0, w0), (t1, w1) in zip(pts, pts[1:]):
        lo, hi = max(t0, a), min(t1, b)
        if hi > lo:
            j += (w0 + w1) / 2 * (hi - lo)
    return j


def stamps(name):
    rows = []
    p = out / name
    if p.exists():
        for line in p.read_text().splitlines():
            t, b, n = line.split()
            rows.append((float(t), int(b), int(n)))
    return rows


def read_walls(name):
    """Wall seconds by mode from a file of "MODE I START END" lines ({} when it is missing)."""
    walls = {}
    p = out / name
    for line in p.read_text().splitlines() if p.exists() else []:
        mode, _, s, e = line.split()
        walls.setdefault(mode, []).append(float(e) - float(s))
    return walls


def load(name):
    p = out / name
    text = p.read_text() if p.exists() else ""
    return json.loads(text) if text.strip() else None


P = power()
print(f"nvidia-smi readings: {len(P)}; GPU: {(out / 'gpu.txt').read_text().strip()}")

# 2. One run.
run = load("run.json")
st = stamps("run.stamps")
if run and st:
    c = run.get("conditions") or {}
    # The run's own steps from its second on (the first carries the start-up).
    a, b = st[1][0], st[-1][0]
    samples = sum(n for _, _, n in st[2:])
    smi_j = integrate(P, a, b)
    hr_w = c["energy_j"] / c["seconds"] if c.get("energy_j") else None
    sps = run.get("samples_per_s")
    hr_jps = hr_w / sps if hr_w and sps else None
    smi_jps = smi_j / samples
    print("\n| `headroom run` (resnet50, batch 128, 30 s) | Headroom (NVML) | nvidia-smi power × time | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| mean power, W | {hr_w:.1f} | {smi_j / (b - a):.1f} | {hr_w / (smi_j / (b - a)):.3f} |")
    print(f"| joules per sample | {hr_jps:.4f} | {smi_jps:.4f} | {hr_jps / smi_jps:.3f} |")
    print(f"(source: {c.get('energy_source')}; Headroom {sps:.1f} samples/s over {c['seconds']:.1f} s; "
          f"the loop's own {samples} samples in {b - a:.1f} s = {samples / (b - a):.1f}/s)")

# 3. The user-script sweep: each point against nvidia-smi over its last timed steps.
us = load("usersweep.json")
st = stamps("usersweep.stamps")
if us and st:
    points = us.get("sweep", us).get("points", [])
    print("\n| user-script sweep point | timed steps | Headroom J/sample (NVML) | nvidia-smi J/sample | ratio |")
    print("|---|---:|---:|---:|---:|")
    for p in points:
        if p.get("status") != "ok":
            print(f"| {p['batch']} ({p.get('status')}) | | | | |")
            continue
        c = p.get("conditions") or {}
        mine = [r for r in st if r[1] == p["batch"]]
        n = p.get("timed_steps") or 0
        # The start's last run of consecutive steps (a start begun ahead and stopped at a
        # gate leaves no steps before its own).
        if len(mine) <= n or not c.get("energy_j"):
            print(f"| {p['batch']} | {n} | {c.get('energy_j')} | (too few stamps: {len(mine)}) | |")
            continue
        win = mine[-(n + 1):]
        a, b = win[0][0], win[-1][0]
        smi = integrate(P, a, b) / sum(r[2] for r in win[1:])
        hr = c["energy_j"] / c["seconds"] / p["samples_per_s"]
        print(f"| {p['batch']} | {n} | {hr:.4f} | {smi:.4f} | {hr / smi:.3f} |")

# 4. The sampler's cost.
walls = read_walls("sweep.walls")
if walls:
    print("\n| conditions | built-in cnn sweep wall s (one per pair) | median |")
    print("|---|---|---:|")
    modes = [m for m in ("on", "coarse", "off") if walls.get(m)]
    for mode in modes:
        w = walls.get(mode, [])
        print(f"| {mode} | {', '.join(f'{x:.2f}' for x in w)} | {statistics.median(w):.2f} |")
    for mode in modes[:-1]:
        print(f"ratio of medians {mode}/off: "
              f"{statistics.median(walls[mode]) / statistics.median(walls['off']):.4f}")
    # Where each mode's wall time went: the worker's steps (its points' steps_s) and the rest.
    for mode in modes:
        rows = []
        for i in range(1, len(walls[mode]) + 1):
            sw = load(f"sweep-{mode}-{i}.json")
            pts = (sw or {}).get("points") or (sw or {}).get("sweep", {}).get("points", [])
            if pts:
                rows.append((sum(p.get("steps_s") or 0 for p in pts),
                             [round(p.get("samples_per_s") or 0) for p in pts]))
        if rows:
            steps = statistics.median(r[0] for r in rows)
            print(f"  {mode}: steps {steps:.2f} s a sweep (median); samples/s per point "
                  f"{', '.join(str(r[1]) for r in rows[:3])}")
    # The sampler's cost, part by part: the worker's steps (the same points time the same steps
    # in every mode, so a difference is steps made slower), each batch's samples/s, and the
    # rest of the wall time (process start, CUDA, the model, each point's setup, the answer).
    for mode in modes:
        rest, rate = [], {}
        for i in range(1, len(walls[mode]) + 1):
            sw = load(f"sweep-{mode}-{i}.json")
            pts = (sw or {}).get("points") or []
            if pts:
                rest.append(walls[mode][i - 1] - sum(p.get("steps_s") or 0 for p in pts))
                for p in pts:
                    if p.get("samples_per_s"):
                        rate.setdefault(p["batch"], []).append(p["samples_per_s"])
        if rest:
            q = sorted(rest)
            print(f"  {mode}: wall minus steps, median {statistics.median(rest):.3f} s "
                  f"(middle half {q[len(q) // 4]:.3f}–{q[-len(q) // 4 - 1]:.3f}); samples/s median "
                  + ", ".join(f"{b}: {statistics.median(v):.0f}" for b, v in sorted(rate.items())))
    # Each pair ran back to back (on, then off): the ratio within a pair leaves out the drift
    # between pairs. Its median, and the middle half of them.
    pairs = sorted(a / b for a, b in zip(walls.get("on", []), walls.get("off", [])))
    if len(pairs) >= 4:
        q = len(pairs) // 4
        print(f"on/off within each of {len(pairs)} pairs: median {statistics.median(pairs):.4f}, "
              f"middle half {pairs[q]:.4f}–{pairs[-q - 1]:.4f}, mean {statistics.mean(pairs):.4f}")
    sw = load("sweep-on-1.json")
    if sw:
        pts = sw.get("points") or sw.get("sweep", {}).get("points", [])
        for p in pts:
            c = p.get("conditions") or {}
            if c.get("energy_j") and p.get("samples_per_s"):
                w = c["energy_j"] / c["seconds"]
                print(f"  cnn batch {p['batch']}: {p['samples_per_s']:.0f} samples/s, {w:.0f} W, "
                      f"{w / p['samples_per_s'] * 1000:.3f} mJ/sample, {p['samples_per_s'] / w:.0f} samples/J, "
                      f"GPU busy {p.get('gpu_busy')} (NVML)")

# 4b. Built-in sweep points against nvidia-smi over each point's own span.
built = sorted(out.glob("builtin-*.json")) + sorted(out.glob("sweep-on-*.json"))
if built:
    print("\n| built-in sweep | batch | timed s | Headroom W (NVML) | nvidia-smi W | ratio | note |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for f in built:
        d = load(f.name) or {}
        for p in d.get("points") or d.get("sweep", {}).get("points", []):
            c = p.get("conditions") or {}
            if p.get("status") != "ok" or c.get("from_unix") is None:
                continue
            a = c["from_unix"]; b = a + c["seconds"]
            ref = integrate(P, a, b) / (b - a) if b > a else None
            hr = c["energy_j"] / c["seconds"] if c.get("energy_j") else None
            ratio = f"{hr / ref:.3f}" if hr and ref else ""
            print(f"| {f.stem} | {p['batch']} | {c['seconds']:.2f} | {hr or 0:.0f} | {ref or 0:.0f} | {ratio} | {c.get('energy_note') or ''} |")

    # A short point's power against the same batch held for seconds (`builtin-long-*`, where
    # both readers agree): which reader is off on a half-second span, and by how much. NVML's
    # figures move every 100 ms and nvidia-smi's instant readings lag the load, so on short spans
    # the two differ by more than either differs from the long figure.
    held = {}
    for f in sorted(out.glob("builtin-long-*.json")):
        for p in (load(f.name) or {}).get("points") or []:
            c = p.get("conditions") or {}
            if p.get("status") == "ok" and c.get("energy_j") and c.get("from_unix") is not None:
                a = c["from_unix"]; b = a + c["seconds"]
                held.setdefault(p["batch"], []).append(
                    (c["energy_j"] / c["seconds"], integrate(P, a, b) / (b - a)))
    if held:
        print("\n| batch | held long: Headroom W, nvidia-smi W | short points: Headroom W / held | nvidia-smi W / held |")
        print("|---:|---|---|---|")
        for batch, hs in sorted(held.items()):
            ref = statistics.mean(h[0] for h in hs)
            mine, smi = [], []
            for f in built:
                if "long" in f.stem:
                    continue
                for p in (load(f.name) or {}).get("points") or []:
                    c = p.get("conditions") or {}
                    if p.get("batch") == batch and p.get("status") == "ok" and c.get("energy_j"):
                        a = c["from_unix"]; b = a + c["seconds"]
                        mine.append(c["energy_j"] / c["seconds"] / ref)
                        smi.append(integrate(P, a, b) / (b - a) / ref)
            print(f"| {batch} | {', '.join(f'{h[0]:.0f}, {h[1]:.0f}' for h in hs)} | "
                  f"{' '.join(f'{x:.3f}' for x in mine)} | {' '.join(f'{x:.3f}' for x in smi)} |")
    # How many short points went without energy (too few counter updates), and why.
    short = [p for f in built if "long" not in f.stem
             for p in (load(f.name) or {}).get("points") or [] if p.get("status") == "ok"]
    bare = [p for p in short if not (p.get("conditions") or {}).get("energy_j")]
    print(f"built-in short points with energy: {len(short) - len(bare)} of {len(short)}"
          + "".join(f"; {p['batch']}: {(p.get('conditions') or {}).get('energy_note')}" for p in bare))

# 5. The profiler window.
walls = read_walls("profile.walls")
if walls:
    print("\n| resnet50, batch 128, 150 steps | wall s (two runs) |")
    print("|---|---|")
    for mode in ("plain", "window"):
        print(f"| {mode} | {', '.join(f'{x:.2f}' for x in walls.get(mode, []))} |")
    w = load("profile-window-1.json")
    prof = (w or {}).get("observed", {}).get("profile") or {}
    if prof:
        print(f"window: {prof.get('iterations')} iterations after {prof.get('warmup')}, "
              f"{prof.get('window_s', 0):.2f} s, writing {prof.get('write_s', 0):.2f} s, "
              f"{prof.get('before_ms')} ms per iteration before; trace {prof.get('trace')}")
        for op in prof.get("ops", [])[:8]:
            print("  ", json.dumps(op)[:200])

# 6. Numerics.
wpath = out / "numerics.walls"
if wpath.exists():
    print("\n| `headroom numerics` (batch 32) | dtype | wall s | comparison s | first layer past 1e-3 | largest error (where) | verdict |")
    print("|---|---|---:|---:|---|---|---|")
    for line in wpath.read_text().splitlines():
        model, dt, s0, e0 = line.split()
        v = load(f"numerics-{model}-{dt}.json") or {}
        n = (v.get("observed") or {}).get("numerics") or {}
        items = n.get("layers", []) + ([n["output"]] if n.get("output") else []) + n.get("grads", [])
        worst = max(items, key=lambda x: x["rel"]) if items else None
        first = next((l for l in n.get("layers", []) if l["rel"] > n.get("tolerance", 1e-3)), None)
        first_s = f"{first['name']} ({first['rel']:.2e})" if first else "-"
        worst_s = f"{worst['rel']:.2e} ({worst['name']})" if worst else "-"
        within = worst is not None and worst["rel"] <= n.get("tolerance", 1e-3)
        verdict = n.get("error") or ("within" if within else "differs")
        print(f"| {model} | {dt} | {float(e0) - float(s0):.1f} | {n.get('seconds', 0):.2f} | "
              f"{first_s} | {worst_s} | {verdict} |")
