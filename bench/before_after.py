"""Side by side: two `headroom` binaries (before/after a change) run the same CPU sweep, interleaved,
fresh HEADROOM_HOME each; prints wall time, the points run and the answers.

    python bench/before_after.py WORKLOAD ROUNDS [sweep options...]   BEFORE=PATH AFTER=PATH
"""
import json, os, subprocess, sys, tempfile, time
bins = {"before": os.environ.get("BEFORE", "target/oldbuild/release/headroom"),
        "after": os.environ.get("AFTER", "target/release/headroom")}
wl = sys.argv[1]; rounds = int(sys.argv[2]); extra = sys.argv[3:]
res = {k: [] for k in bins}
for r in range(rounds):
    for k, b in bins.items():
        with tempfile.TemporaryDirectory() as h:
            t = time.perf_counter()
            out = subprocess.run([b, "sweep", "--device", "cpu", "--workload", wl, "--json", *extra], capture_output=True, text=True,
                                 env=dict(os.environ, HEADROOM_HOME=h, LD_LIBRARY_PATH=""))
            w = time.perf_counter() - t
        d = json.loads(out.stdout)
        pts = [p["batch"] for p in d["points"]]
        s = d["summary"]
        res[k].append(w)
        print(f"{wl} {k:6} round {r}: {w:.2f} s, points {pts}, best {s.get('best_batch')}, knee {s.get('knee_batch')}, fit {s.get('max_fit_batch')}", flush=True)
for k, v in res.items():
    v = sorted(v); print(f"{wl} {k}: median {v[len(v)//2]:.2f} s of {len(v)}: {[round(x,2) for x in v]}")
