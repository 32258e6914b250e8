#!/usr/bin/env bash
# On the GPU host: sweeps that reach true CUDA OOMs, then 100 training steps at the batch each one
# answered, in a fresh process, to show the margin is real.
#   OUT=... bash bench/real_oom.sh dist/headroom
# 1. prediction off, budget the whole device, from 4096: only real OOMs bound the search;
# 2. prediction on, budget the whole device: the jump to the line's limit, verified (an OOM there
#    is caught and the gap narrowed).
set -uo pipefail
HR=${1:-dist/headroom}
OUT=${OUT:-gpu-out}
STEPS=${STEPS:-100}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export HEADROOM_HOME=$(mktemp -d)
LOG="$OUT/real_oom.log"; : > "$LOG"
fit() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["max_fit_batch"])' "$1"; }
for variant in ${VARIANTS:-no-predict predict}; do
  extra=(); [ "$variant" = no-predict ] && extra=(--no-predict --start-batch 4096 --max-batch 8192)
  t0=$(date +%s.%N)
  "$HR" sweep --device cuda --workload vit-tiny --budget 100% "${extra[@]}" --json \
    > "$OUT/oom-$variant.json" 2>> "$LOG"
  echo "sweep ($variant) exit $? in $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
  B=$(fit "$OUT/oom-$variant.json")
  t0=$(date +%s.%N)
  "$HR" epochs --device cuda --workload vit-tiny --batch "$B" --epochs 1 --steps-per-epoch "$STEPS" --json \
    > "$OUT/oom-$variant-train$STEPS.json" 2>> "$LOG"
  echo "$STEPS steps at batch $B ($variant): exit $? in $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
done
VARIANTS="${VARIANTS:-no-predict predict}" python3 - "$OUT" "$STEPS" <<'PY'
import json, os, sys
out, steps = sys.argv[1], sys.argv[2]
for v in os.environ["VARIANTS"].split():
    d = json.load(open(f"{out}/oom-{v}.json"))
    s = d["summary"]
    print(f"[{v}] fit {s['max_fit_batch']} first failing {s['first_failing_batch']} limit {s['limit']} "
          f"capacity {d['hello']['capacity_bytes']}")
    for p in d["points"]:
        print(f"  {p['batch']:>6} {p['status']:<12} {p['samples_per_s'] or 0:9.1f} peak {p['peak_bytes']} "
              f"predicted {p['predicted_peak_bytes']} {(p['message'] or '')[:70]}")
    try:
        t = json.load(open(f"{out}/oom-{v}-train{steps}.json"))
        e = (t.get("samples") or [{}])[-1]
        print(f"  train {steps} steps: status {t.get('status')}, {e.get('samples_per_s')} samples/s, "
              f"live {e.get('live_bytes')} cache {e.get('cache_bytes')}, error {str(t.get('error'))[:300]}")
    except Exception as e:  # noqa: BLE001 - report what there is
        print(f"  train: no JSON ({e})")
PY
