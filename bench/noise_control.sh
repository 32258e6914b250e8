#!/usr/bin/env bash
# bench/noise_control.sh HEADROOM PYTHON OUTDIR [DEVICE] [RUNS]: issue 23's runs with a control.
# Each run is a Headroom sweep (`sweep --device DEVICE --workload mlp --max-batch 512 --json`)
# followed at once by PyTorch's own timing of the same model at the same batches and threads
# (bench/torch_loop.py, torch.utils.benchmark, 0.5 s a batch), so the machine's own drift between
# runs is seen beside Headroom's. RUNS quiet runs (default 3), then RUNS beside one spinning python3.
set -u
HR=$1; PY=$2; OUT=$3; DEV=${4:-cpu}; RUNS=${5:-3}
mkdir -p "$OUT"
export HEADROOM_HOME=$(mktemp -d)
here=$(cd "$(dirname "$0")" && pwd)
one() { # name
    "$HR" sweep --device "$DEV" --workload mlp --max-batch 512 --json > "$OUT/$1.json" 2> "$OUT/$1.err"
    threads=$("$PY" -c "import json,sys; print((json.load(open(sys.argv[1])).get('hello') or {}).get('threads') or 0)" "$OUT/$1.json" 2>/dev/null || echo 0)
    args=(--workload mlp --batches 1,64,256,512 --device "$DEV" --min-run-time 0.5)
    [ "$threads" -gt 0 ] && args+=(--threads "$threads")
    "$PY" "$here/torch_loop.py" "${args[@]}" > "$OUT/$1.torch.jsonl" 2> /dev/null
}
for i in $(seq 1 "$RUNS"); do one "quiet$i"; done
"$PY" -c "while True: pass" & SP=$!
sleep 1
for i in $(seq 1 "$RUNS"); do one "loaded$i"; done
kill $SP
