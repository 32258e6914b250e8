#!/usr/bin/env python3
"""An open pressed the moment the tray is ready (during its start-up readiness check), two
builds interleaved: `old` from OLD_BIN (a folder holding headroom, headroom-app, headroom-tray,
headroom-worker of the build before), `new` from $CARGO_TARGET_DIR/release. Uses
`bench/first_open.py`'s `one()`; SETTLE_S (0) is how long after ready the key is pressed.

    xvfb-run -a -s "-screen 0 1280x1024x24" dbus-run-session -- python3 bench/first_open_hold_ab.py [RUNS]
"""
import os, sys, statistics, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import first_open as fo
bins = {"old": os.environ.get("OLD_BIN", "/tmp/old/release"), "new": os.path.join(os.environ["CARGO_TARGET_DIR"], "release")}
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 4
settle = float(os.environ.get("SETTLE_S", "0"))
used = tempfile.mkdtemp()
fo.BIN = bins["new"]; fo.one(used, {}, 1.0)
res = {k: [] for k in bins}
for i in range(runs):
    for k, b in (list(bins.items()) if i % 2 == 0 else list(bins.items())[::-1]):
        fo.BIN = b
        r = fo.one(used, {}, settle)
        res[k].append(r)
        print(k, [round(x) for x in r], flush=True)
for k, xs in res.items():
    print(k, "mapped median", round(statistics.median(x[0] for x in xs)), "loaded median", round(statistics.median(x[1] for x in xs)), [round(x[1]) for x in xs])
