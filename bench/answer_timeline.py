"""Where a sweep's wall time goes: starts `headroom worker` directly with the search request
`headroom sweep` sends by default (doubling from 1, no maximum, default budget), timestamps every
event as it arrives, and prints per point the seconds from the previous point's end to its own
(warm-up, the first step at a new shape, timed and split steps), plus the start (spawn to hello)
and the tail (the `result` event to the process's exit).

    python bench/answer_timeline.py --headroom dist/headroom --device cuda --workload vit-tiny
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", default="target/release/headroom")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workload", default="mlp")
    ap.add_argument("--max-batch", type=int, default=0)
    ap.add_argument("--budget-percent", type=float, default=0, help="as `sweep --budget P%%` (0: the default budget)")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    req = {"job": "sweep", "device": a.device, "workload": a.workload, "input_shape": None, "dtype": "f32",
           "mode": "train", "plan": {"kind": "search", "start": 1, "max": a.max_batch},
           "budget": {"kind": "percent", "value": a.budget_percent} if a.budget_percent else {"kind": "default"}, "steps": None, "threads": None, "predict": True}
    events = []
    with tempfile.TemporaryDirectory() as home:
        t0 = time.perf_counter()
        p = subprocess.Popen([a.headroom, "worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, HEADROOM_HOME=home))
        p.stdin.write(json.dumps(req) + "\n")
        p.stdin.flush()
        for line in p.stdout:
            ev = json.loads(line)
            events.append((time.perf_counter() - t0, ev))
            if ev.get("event") == "error":
                sys.exit(f"worker error: {ev}")
        eof = time.perf_counter() - t0
        p.wait()
        exit_s = time.perf_counter() - t0
    hello = next(t for t, e in events if e["event"] == "hello")
    result = next((t for t, e in events if e["event"] == "result"), None)
    print(f"{a.workload} on {a.device}: hello {hello:.3f} s, result {result:.3f} s, stdout closed {eof:.3f} s, exit {exit_s:.3f} s")
    print("| batch | status | s since previous | in steps s | first step s | outside steps s | warm-up steps | timed steps | step ms p50 | timed s |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    prev = hello
    rows = []
    for t, e in events:
        if e["event"] != "point":
            continue
        timed = (e.get("timed_steps") or 0) * (e.get("step_ms_p50") or 0) / 1000
        steps = e.get("steps_s") or 0.0
        rows.append({"batch": e["batch"], "status": e["status"], "at": t, "took": t - prev, "warmup": e.get("warmup_steps"),
                     "timed_steps": e.get("timed_steps"), "p50_ms": e.get("step_ms_p50"), "timed_s": timed,
                     "steps_s": e.get("steps_s"), "first_step_s": e.get("first_step_s")})
        print(f"| {e['batch']} | {e['status']} | {t - prev:.3f} | {steps:.3f} | {(e.get('first_step_s') or 0):.3f} | "
              f"{t - prev - steps:.3f} | {e.get('warmup_steps')} | {e.get('timed_steps')} | "
              f"{(e.get('step_ms_p50') or 0):.1f} | {timed:.3f} |")
        prev = t
    total_timed = sum(r["timed_s"] for r in rows)
    total_steps = sum(r["steps_s"] or 0 for r in rows)
    print(f"sum of timed steps {total_timed:.2f} s, of all steps {total_steps:.2f} s; wall {exit_s:.2f} s; "
          f"overhead over timed {exit_s / total_timed:.2f}, over steps {exit_s / max(total_steps, 1e-9):.2f}; "
          f"start (spawn to hello) {hello:.2f} s, tail (result to exit) {exit_s - result:.2f} s")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"args": vars(a), "hello": hello, "result": result, "eof": eof, "exit": exit_s, "points": rows,
                       "events": [(t, e) for t, e in events if e["event"] != "heartbeat"]}, f, indent=1)


if __name__ == "__main__":
    main()
