#!/usr/bin/env bash
# Runs on the lent GPU host (torch 2.11.0+cu130 in its python3), with a `headroom` built here:
#   bash bench/gpu_check.sh dist/headroom
# Writes everything it measured under $OUT (or ./gpu-out).
set -uo pipefail
HR=${1:-dist/headroom}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH="$TORCH_LIB" HEADROOM_HOME="$OUT/home"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.txt"
"$HR" doctor | tee "$OUT/doctor.txt"
# Sample GPU utilisation while the sweep runs, to show the work is on the GPU.
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 500 > "$OUT/gpu-util.csv" &
SMI=$!
start=$EPOCHREALTIME
"$HR" sweep --device cuda --workload vit-tiny --json > "$OUT/sweep-vit.json" 2> "$OUT/sweep-vit.stderr"
rc=$?
echo "sweep exit $rc, wall $(python3 -c "print(round($EPOCHREALTIME - $start, 2))") s" | tee -a "$OUT/summary.txt"
kill $SMI
"$HR" sweep --device cuda --workload vit-tiny --batches 8192 --json > "$OUT/oom.json" 2> "$OUT/oom.stderr"
echo "forced OOM exit $?" | tee -a "$OUT/summary.txt"
"$HR" sweep --device cuda --workload vit-tiny --batches 64,4096 --budget 4GiB --json > "$OUT/budget.json" 2> "$OUT/budget.stderr"
echo "tiny budget exit $?" | tee -a "$OUT/summary.txt"
"$HR" ledger list | tee "$OUT/ledger.txt"
