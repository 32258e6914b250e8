#!/usr/bin/env bash
# Issue 42 on the GPU host: what `doctor` lists for the GPU through NVML, and whether a sweep's
# points name another process computing on the same GPU (NVML's compute processes) while a
# stranger's loop trains there, against the same sweep with the GPU to itself.
#
#     OUT=DIR bash bench/h200_gpu_others.sh dist/headroom
set -uo pipefail
HR=${1:-dist/headroom}
OUT=${OUT:-h200-others}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export HEADROOM_HOME="$OUT/home"
echo "== doctor"
"$HR" doctor --json > "$OUT/doctor.json" 2> "$OUT/doctor.stderr"
"$HR" doctor > "$OUT/doctor.txt" 2>&1
echo "== sweep alone"
"$HR" sweep --device cuda --workload cnn --batches 64,256 --json > "$OUT/alone.json" 2> "$OUT/alone.stderr"
echo "== sweep beside a stranger"
python3 - > "$OUT/stranger.txt" 2>&1 <<'PY' &
import time, torch
x = torch.randn(8192, 8192, device="cuda")
keep = torch.empty(3 << 30, dtype=torch.uint8, device="cuda")  # 3 GiB held
print("stranger up", flush=True)
end = time.time() + 90
while time.time() < end:
    y = x @ x
    torch.cuda.synchronize()
print("stranger done", flush=True)
PY
S=$!
sleep 8
"$HR" sweep --device cuda --workload cnn --batches 64,256 --json > "$OUT/beside.json" 2> "$OUT/beside.stderr"
"$HR" sweep --device cuda --workload cnn --batches 64,256 > "$OUT/beside.txt" 2>&1
kill $S 2>/dev/null; wait $S 2>/dev/null
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for name in ("alone", "beside"):
    try:
        d = json.load(open(f"{out}/{name}.json"))
    except Exception as e:
        print(name, "unreadable", e); continue
    pts = d.get("points") or d.get("sweep", {}).get("points", [])
    for p in pts:
        print(name, p.get("batch"), p.get("status"), p.get("samples_per_s"),
              "others:", json.dumps((p.get("load") or {}).get("accel_others")))
    print(name, "warnings:", json.dumps(d.get("warnings") or d.get("sweep", {}).get("warnings")))
PY
ls -la "$OUT"
echo "== numerics --workload (issue 45): the built-in models and a TorchScript resnet-ish file, cuda against cpu"
for w in cnn vit-tiny gpt-tiny; do for dt in f32 bf16 bf16-on-device; do
  ref=cpu; [ $dt = bf16-on-device ] && { ref=device; }
  s=$(date +%s.%N)
  "$HR" numerics --workload $w --device cuda --dtype ${dt%%-*} --reference $ref --batch 8 > "$OUT/numerics-$w-$dt.txt" 2>&1
  e=$(date +%s.%N); echo "$w $dt $(awk -v a=$s -v b=$e "BEGIN{printf \"%.1f\", b-a}") s: $(grep "^numerics:" "$OUT/numerics-$w-$dt.txt")"
done; done
