#!/usr/bin/env bash
# What one contention sample costs with a laptop's worth of processes: starts N idle processes
# (default 500, about what a Mac with a call, an IDE and a browser runs), then takes 20 samples
# one second apart with `headroom contention --watch` and prints the first (cold: names, paths and
# command lines read) and the median of the rest (warm: memory only), in ms of wall time.
# Usage: bash bench/contention_cost.sh [N]  (after scripts/bootstrap.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-500}
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/headroom"
export HEADROOM_HOME="$(mktemp -d)"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$HEADROOM_HOME"; }
trap cleanup EXIT
for _ in $(seq "$N"); do sleep 600 & pids+=($!); done
"$BIN" contention --watch --count 20 --interval 1 --json | python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin]
ms = [r["sample_ms"] for r in rows]
n = rows[-1]["processes"]
rest = ms[1:]
print("processes %d: first sample %.1f ms, then median %.1f ms (min %.1f, max %.1f) over %d"
      % (n, ms[0], statistics.median(rest), min(rest), max(rest), len(rest)))'
