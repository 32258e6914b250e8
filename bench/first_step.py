"""Worker start to first measured step: starts `headroom worker` directly (as the CLI and the app
do), sends one sweep request for a single batch, and timestamps its events as they arrive: the
`hello` (libtorch loaded, device initialised, model built and checked with one sample), the first
warm-up step's progress, and the first finished point.

    python bench/first_step.py --headroom dist/headroom --device cuda --workload vit-tiny --runs 5
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def one(args):
    req = {"job": "sweep", "device": args.device, "workload": args.workload, "input_shape": None, "dtype": "f32",
           "mode": "train", "plan": {"kind": "explicit", "batches": [args.batch]}, "budget": {"kind": "default"},
           "steps": None, "threads": None, "predict": True}
    with tempfile.TemporaryDirectory() as home:
        t0 = time.perf_counter()
        p = subprocess.Popen([args.headroom, "worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, HEADROOM_HOME=home))
        p.stdin.write(json.dumps(req) + "\n")
        p.stdin.flush()
        marks = {}
        for line in p.stdout:
            ev = json.loads(line)
            kind = ev.get("event")
            now = time.perf_counter() - t0
            if kind == "hello":
                marks.setdefault("hello", now)
            elif kind == "progress" and ev.get("phase") == "warmup":
                marks.setdefault("first_step", now)
            elif kind == "point":
                marks.setdefault("first_point", now)
            elif kind == "error":
                sys.exit(f"worker error: {ev}")
        p.wait()
        marks["exit"] = time.perf_counter() - t0
        return marks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", default="target/release/headroom")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workload", default="mlp")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    runs = [one(args) for _ in range(args.runs)]
    print(f"worker start to first step: {args.workload} batch {args.batch} on {args.device}, {args.runs} runs (median, min-max)")
    print("| event | seconds after spawn |")
    print("|---|---:|")
    for k in ("hello", "first_step", "first_point", "exit"):
        v = [r[k] for r in runs if k in r]
        print(f"| {k} | {statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f}) |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
