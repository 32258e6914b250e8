#!/usr/bin/env python3
"""How long the menu bar's first open takes (issue 44): the shortcut pressed on a freshly
started `headroom-tray` until the popover's process says its page has loaded, and again until
its window is mapped, in the cases a user meets:

- `first ever`: a HOME the app never ran in (WebKit makes its folders and caches);
- `new session`: a HOME it ran in before, the disk cache warm (a login after a recent one);
- `cold disk`: the page cache dropped first (a login after a reboot), with the tray's
  read-ahead of the popover's files on and off (`HEADROOM_TRAY_PREWARM=0`). Needs root.

Each case RUNS times (3 by default), interleaved. The window is looked for every 25 ms (each
look is an `xdotool` process: looking every 5 ms slowed the start it timed by about 60 ms on
2 cores); the page's load is read from the popover's standard error as it comes. Run it under Xvfb and a D-Bus session, after
scripts/bootstrap.sh:

    xvfb-run -a -s "-screen 0 1280x1024x24" dbus-run-session -- python3 bench/first_open.py [RUNS]
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.abspath("target")), "release")


def mapped() -> bool:
    r = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--name", "^Headroom$"],
        capture_output=True,
    )
    return r.returncode == 0 and r.stdout.strip() != b""


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def one(home: str, env_extra: dict, settle_s: float, again: bool = False) -> tuple:
    """Starts the tray in `home`, waits until it is ready and `settle_s` more, presses the
    shortcut: (ms to the window mapped, ms to the page loaded). With `again`, of the second
    open of the same tray, once the first popover's process has ended."""
    hh = tempfile.mkdtemp()
    env = dict(os.environ)
    env.update(
        HOME=home,
        HEADROOM_HOME=hh,
        HEADROOM_BIN=os.path.join(BIN, "headroom"),
        HEADROOM_APP_BIN=os.path.join(BIN, "headroom-app"),
        HEADROOM_APP_KEEP_POPOVER_S="2",
    )
    env.pop("XDG_CONFIG_HOME", None)
    env.update(env_extra)
    p = subprocess.Popen(
        [os.path.join(BIN, "headroom-tray")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready = threading.Event()
    loaded = {}
    ended = threading.Event()

    def read():
        for line in p.stderr:
            if "headroom-tray: ready" in line:
                ready.set()
            if "page loaded" in line and "at" not in loaded:
                loaded["at"] = time.monotonic()
            if "nothing runs: ending" in line:
                ended.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not ready.wait(60):
            raise RuntimeError("headroom-tray did not get ready in 60 s")
        time.sleep(settle_s)
        if again:
            subprocess.run(["xdotool", "key", "--clearmodifiers", "ctrl+shift+h"], check=True)
            until = time.monotonic() + 60
            while "at" not in loaded and time.monotonic() < until:
                time.sleep(0.05)
            time.sleep(2)
            subprocess.run(["xdotool", "key", "--clearmodifiers", "ctrl+shift+h"], check=True)
            if not ended.wait(60):
                raise RuntimeError("the first popover did not end in 60 s")
            time.sleep(2)
            loaded.clear()
        t0 = time.monotonic()
        subprocess.run(["xdotool", "key", "--clearmodifiers", "ctrl+shift+h"], check=True)
        window = None
        while time.monotonic() - t0 < 60 and ("at" not in loaded or window is None):
            if window is None and mapped():
                window = time.monotonic()
            time.sleep(0.025)
        if "at" not in loaded or window is None:
            raise RuntimeError("the popover did not open in 60 s")
        return (window - t0) * 1e3, (loaded["at"] - t0) * 1e3
    finally:
        subprocess.run(["pkill", "-P", str(p.pid)], check=False)
        p.terminate()
        p.wait(10)
        time.sleep(1)
        shutil.rmtree(hh, ignore_errors=True)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    settle = float(os.environ.get("SETTLE_S", "8"))
    used = tempfile.mkdtemp()
    one(used, {}, 1.0)  # makes WebKit's folders in `used`
    cases = {
        "first ever (fresh HOME)": [],
        "new session (HOME used, disk cache warm)": [],
        "the same tray's second open": [],
    }
    root = os.geteuid() == 0
    if root:
        cases["cold disk, read-ahead on"] = []
        cases["cold disk, read-ahead off"] = []
    for _ in range(runs):
        fresh = tempfile.mkdtemp()
        cases["first ever (fresh HOME)"].append(one(fresh, {}, settle))
        shutil.rmtree(fresh, ignore_errors=True)
        cases["new session (HOME used, disk cache warm)"].append(one(used, {}, settle))
        cases["the same tray's second open"].append(one(used, {}, settle, again=True))
        if root:
            drop_caches()
            cases["cold disk, read-ahead on"].append(one(used, {}, settle))
            drop_caches()
            cases["cold disk, read-ahead off"].append(
                one(used, {"HEADROOM_TRAY_PREWARM": "0"}, settle)
            )
    print(f"| first open, {runs} runs each, {settle:.0f} s after the tray is ready | window mapped, ms (median; each) | page loaded, ms (median; each) |")
    print("|---|---:|---:|")
    for name, xs in cases.items():
        w = [round(x[0]) for x in xs]
        l = [round(x[1]) for x in xs]
        print(
            f"| {name} | {statistics.median(w):.0f} ({', '.join(map(str, w))}) "
            f"| {statistics.median(l):.0f} ({', '.join(map(str, l))}) |"
        )
    shutil.rmtree(used, ignore_errors=True)


if __name__ == "__main__":
    main()
