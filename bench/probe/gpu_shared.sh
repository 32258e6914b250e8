#!/usr/bin/env bash
# A CUDA sweep beside another process that holds the same GPU: its points must name it.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
export HEADROOM_HOME=$(mktemp -d)
cp dist/headroom dist/headroom-worker "$HEADROOM_HOME/"
H=$HEADROOM_HOME/headroom
echo "== alone"; $H sweep --device cuda --workload mlp --batches 64,256 --json > "$OUT/alone.json" 2> "$OUT/alone.err"; echo rc=$?
cp /proc/self/status /dev/null
python3 -c "import torch,time; x=torch.empty(3<<30,dtype=torch.uint8,device='cuda'); torch.cuda.synchronize(); time.sleep(60)" &
P=$!; sleep 10
echo "== beside pid $P"; $H sweep --device cuda --workload mlp --batches 64,256 --json > "$OUT/shared.json" 2> "$OUT/shared.err"; echo rc=$?
kill $P
nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits > "$OUT/after.txt"
python3 - "$OUT" <<'PY'
import json,sys
for n in ["alone","shared"]:
    d=json.load(open(f"{sys.argv[1]}/{n}.json"))
    print(n, "warnings:", d.get("warnings"))
    for p in d["points"]:
        print("  ", p["batch"], p.get("samples_per_s"), (p.get("load") or {}).get("accel_others"))
    print("  uncertain:", (d.get("summary") or {}).get("uncertain"))
PY
