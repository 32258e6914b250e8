#!/usr/bin/env bash
# bench/noise_runs.sh HEADROOM OUTDIR: issue 23's table — three quiet, then three with one core kept busy
set -u
HR=$1; OUT=$2; mkdir -p "$OUT"
export HEADROOM_HOME=$(mktemp -d)
for i in 1 2 3; do "$HR" sweep --device cpu --workload mlp --max-batch 512 --json > "$OUT/quiet$i.json" 2>/dev/null; done
python3 -c "while True: pass" & SP=$!
sleep 1
for i in 1 2 3; do "$HR" sweep --device cpu --workload mlp --max-batch 512 --json > "$OUT/loaded$i.json" 2>/dev/null; done
kill $SP
