#!/usr/bin/env python3
"""bench/noise_table.py DIR...: one row per sweep JSON (quiet*/loaded*.json) — samples/s and its
± at batch 1, 64, 256 and 512, the answer, the warnings, the points measured again."""
import glob, json, math, os, sys

def cell(p):
    if not p or p.get("samples_per_s") is None:
        return "-"
    cv, n = p.get("step_cv"), p.get("timed_steps") or 0
    ci = f" ±{196 * cv / math.sqrt(n):.0f}%" if cv is not None and n > 1 else ""
    again = " (again)" if p.get("remeasured_from") is not None else ""
    return f"{p['samples_per_s']:.0f}{ci}{again}"

print("| run | threads | at 1 | at 64 | at 256 | at 512 | recommended | uncertain | warnings | measured again | timed s (all points) |")
print("|---|---:|---:|---:|---:|---:|---|---|---:|---|---:|")
for d in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        v = json.load(open(f))
        if "points" not in v:
            continue
        pts = {p["batch"]: p for p in v["points"]}
        s = v.get("summary") or {}
        rec = s.get("recommended_batch")
        rec = f"{rec}{', still rising' if s.get('still_rising') else ''}"
        again = [str(p["batch"]) for p in v["points"] if p.get("remeasured_from") is not None]
        timed = sum(p.get("timed_s") or 0 for p in v["points"])
        print(f"| {os.path.basename(f)[:-5]} | {(v.get('hello') or {}).get('threads')} | {cell(pts.get(1))} | {cell(pts.get(64))} | "
              f"{cell(pts.get(256))} | {cell(pts.get(512))} | {rec} | {'yes' if s.get('uncertain') else 'no'} | "
              f"{len(v.get('warnings') or [])} | {', '.join(again) or '-'} | {timed:.1f} |")
