#!/usr/bin/env bash
# bench/noise_threads.sh HEADROOM OUTDIR: one core busy, interleaved: auto threads, --threads 2, --threads 2 with OMP_WAIT_POLICY=PASSIVE; then three quiet
set -u
HR=$1; OUT=$2; mkdir -p "$OUT"
export HEADROOM_HOME=$(mktemp -d)
python3 -c "while True: pass" & SP=$!
sleep 1
for i in 1 2 3; do
  "$HR" sweep --device cpu --workload mlp --max-batch 512 --json > "$OUT/auto$i.json" 2>/dev/null
  "$HR" sweep --device cpu --workload mlp --max-batch 512 --threads 2 --json > "$OUT/two$i.json" 2>/dev/null
  OMP_WAIT_POLICY=PASSIVE "$HR" sweep --device cpu --workload mlp --max-batch 512 --threads 2 --json > "$OUT/twopassive$i.json" 2>/dev/null
done
kill $SP
for i in 1 2 3; do "$HR" sweep --device cpu --workload mlp --max-batch 512 --json > "$OUT/quiet$i.json" 2>/dev/null; done
