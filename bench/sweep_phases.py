#!/usr/bin/env python3
"""Where a built-in sweep's wall time goes outside its steps, with the conditions sampler on and
off (issue 42): `headroom sweep --json` run in pairs, each run's phases timed from outside —
the command's start to its worker's start, the worker's life, the worker's end to the answer on
stdout, and the answer to the command's exit — the worker found by polling the command's
children every millisecond.

    python3 bench/sweep_phases.py --headroom dist/headroom --pairs 6 --out DIR [--trace]

A mode may name another build after an `@` (`--modes on,off,on@dist/old/headroom`): two builds
compared in the same rounds.
"""
import argparse, json, os, statistics, subprocess, threading, time


def children(pid):
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/children") as f:
                    out += [int(c) for c in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def one(hr, mode, batches, device, trace=False):
    label = mode
    mode, _, other = mode.partition("@")
    hr = other or hr
    env = dict(os.environ, HEADROOM_CONDITIONS=mode)
    if trace:
        env["HEADROOM_CONDITIONS_TRACE"] = "1"
    t0 = time.perf_counter()
    # No batches given: the sweep's own search (to the memory's limit or its own cap).
    chosen = ["--batches", batches] if batches else []
    p = subprocess.Popen([hr, "sweep", "--device", device, "--workload", "cnn", *chosen, "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE if trace else subprocess.DEVNULL, env=env)
    said = []

    def read_err():
        for line in p.stderr:
            said.append(f"{time.perf_counter() - t0:7.3f} {line.decode(errors='replace').rstrip()}")

    reader = threading.Thread(target=read_err, daemon=True) if trace else None
    if reader:
        reader.start()
    seen = {}
    done = threading.Event()

    def watch():
        while not done.is_set():
            now = time.perf_counter() - t0
            kids = children(p.pid)
            for k in kids:
                seen.setdefault(k, [now, now])[1] = now
            for k, v in seen.items():
                if k not in kids and len(v) == 2:
                    v.append(now)  # first moment it was no longer a child
            time.sleep(0.001)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    first = p.stdout.read(1)
    t_answer = time.perf_counter() - t0
    rest = first + p.stdout.read()
    p.wait()
    t_exit = time.perf_counter() - t0
    done.set()
    th.join()
    if reader:
        reader.join()
    doc = json.loads(rest)
    steps = sum(pt.get("steps_s") or 0 for pt in doc.get("points", []))
    worker = max(seen.values(), key=lambda v: v[1] - v[0]) if seen else [float("nan")] * 3
    w_end = worker[2] if len(worker) > 2 else worker[1]
    return {"mode": label, "wall": t_exit, "to_worker": worker[0], "worker": w_end - worker[0],
            "worker_end_to_answer": t_answer - w_end, "answer_to_exit": t_exit - t_answer, "steps": steps,
            "first_steps": sum(pt.get("first_step_s") or 0 for pt in doc.get("points", [])),
            "worker_at": worker[0], "worker_end_at": w_end, "answer_at": t_answer, "stderr": said}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", default="dist/headroom")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--batches", default="256,1024,4096", help="'' for the sweep's own search")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--modes", default="on,off", help="HEADROOM_CONDITIONS values, in turn (coarse: no polling)")
    ap.add_argument("--out", default="")
    ap.add_argument("--trace", action="store_true", help="HEADROOM_CONDITIONS_TRACE=1: each reading, poll and mark timed, stamped")
    a = ap.parse_args()
    rows = []
    for i in range(a.pairs):
        for mode in a.modes.split(","):
            r = one(a.headroom, mode, a.batches, a.device, a.trace)
            rows.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "stderr"}), flush=True)
            for line in r["stderr"]:
                if "conditions" in line:
                    print("   ", line, flush=True)
    keys = ["wall", "to_worker", "worker", "worker_end_to_answer", "answer_to_exit", "steps", "first_steps"]
    modes = a.modes.split(",")
    print("| phase (s, median) | " + " | ".join(modes) + " |")
    print("|---|" + "---:|" * len(modes))
    for k in keys:
        med = [statistics.median(r[k] for r in rows if r["mode"] == m) for m in modes]
        print(f"| {k} | " + " | ".join(f"{v:.3f}" for v in med) + " |")
    # Each mode against the last, run by run in turn (the pairs share the machine's moment).
    base = modes[-1]
    for m in modes[:-1]:
        walls = [(r["wall"], b["wall"]) for r, b in zip((r for r in rows if r["mode"] == m), (r for r in rows if r["mode"] == base))]
        ratios = sorted(w / b for w, b in walls)
        diffs = sorted((w - b) * 1e3 for w, b in walls)
        print(f"paired {m}/{base}: median ratio {statistics.median(ratios):.4f}, median difference "
              f"{statistics.median(diffs):+.1f} ms; ratios " + " ".join(f"{x:.3f}" for x in ratios))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "sweep_phases.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
