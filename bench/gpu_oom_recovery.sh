#!/usr/bin/env bash
# On the GPU host: real OOMs inside a search (prediction off, budget above the device), so the
# bisection has to recover from each OOM and go on. OUT=... bash bench/gpu_oom_recovery.sh dist/headroom
set -uo pipefail
HR=${1:-dist/headroom}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export HEADROOM_HOME="$OUT/home"
"$HR" sweep --device cuda --workload vit-tiny --start-batch 4096 --max-batch 8192 --budget 100% --no-predict --json \
  > "$OUT/oom-recovery.json" 2> "$OUT/oom-recovery.stderr"
echo "oom recovery exit $?"
"$HR" sweep --device cuda --workload matmul --input-shape 8192 --dtype bf16 --batches 1,4,16 --json > "$OUT/matmul-bf16.json" 2>&1
echo "matmul exit $?"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
d = json.load(open(f"{out}/oom-recovery.json"))
print("status", d["status"], "summary", d["summary"]["max_fit_batch"], d["summary"]["first_failing_batch"], d["summary"]["limit"])
for p in d["points"]:
    print(p["batch"], p["status"], p["samples_per_s"], p["peak_bytes"], (p["message"] or "")[:90])
m = json.load(open(f"{out}/matmul-bf16.json"))
for p in m["points"]:
    if p["samples_per_s"]:
        print("matmul bf16 batch", p["batch"], "TFLOP/s", round(p["samples_per_s"] * p["flops_per_sample"] / 1e12, 1))
PY
