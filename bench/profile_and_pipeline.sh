#!/usr/bin/env bash
# Where the time goes, on whatever device this machine has (the H200 run is in bench/results):
#   1. `headroom profile` of the built-in mlp and of a TorchScript model with one deliberately slow
#      layer (a loop of 300 element-wise ops, no weights);
#   2. `headroom run` of one training loop with headroom-data/headroom-step markers, once with a
#      slow pure-Python data stage and once with a wide model: data share and verdict per device.
# Usage: HEADROOM_BIN=dist/headroom PYTHON=python3 TAG=h200 bash bench/profile_and_pipeline.sh OUTDIR
set -euo pipefail
HR=${HEADROOM_BIN:-headroom}
PY=${PYTHON:-python3}
TAG=${TAG:-local}
OUT=${1:-bench/results}
mkdir -p "$OUT"
tmp=$(mktemp -d)
cat > "$tmp/export.py" <<'PY'
import sys, torch
class Slow(torch.nn.Module):
    def forward(self, x):
        for _ in range(300):
            x = torch.tanh(x) * 1.0001
        return x
model = torch.nn.Sequential(
    torch.nn.Linear(64, 256), torch.nn.ReLU(), Slow(), torch.nn.Linear(256, 10))
torch.jit.script(model).save(sys.argv[1])
PY
cat > "$tmp/loop.py" <<'PY'
import sys, torch
decode, width = int(sys.argv[1]), int(sys.argv[2])
dev = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def batch():
    if decode:
        rows = []
        for _ in range(32):
            acc = 0
            for i in range(decode * 1000):
                acc += i % 7
            rows.append([float(acc % 5)] * 256)
        return torch.tensor(rows), torch.randint(0, 10, (32,))
    return torch.randn(32, 256), torch.randint(0, 10, (32,))
for step in range(1000):
    x, y = batch()
    x, y = x.to(dev), y.to(dev)
    print('headroom-data', flush=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f'headroom-step {step} loss={loss.item():.3f}', flush=True)
PY
"$PY" "$tmp/export.py" "$tmp/slow.pt"
"$HR" profile --workload mlp --batch 256 --json > "$OUT/profile_mlp_$TAG.json"
"$HR" profile --workload "$tmp/slow.pt" --input-shape 64 --batch 256 --json > "$OUT/profile_slow_layer_$TAG.json"
"$HR" run --steps 30 --json -- "$PY" "$tmp/loop.py" 40 64 > "$OUT/pipeline_data_bound_$TAG.json"
"$HR" run --steps 30 --json -- "$PY" "$tmp/loop.py" 0 4096 > "$OUT/pipeline_wide_model_$TAG.json"
for f in profile_mlp profile_slow_layer; do
  "$PY" - "$OUT/${f}_$TAG.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["report"]
print(sys.argv[1], d["hello"]["device"], "batch", r["batch"], "step", round(r["point"]["step_ms_p50"], 3), "ms")
for l in r["layers"]:
    fs = l["flops_share"]
    print(f"  {l['name']:>6} {l['forward_ms']:9.3f} ms {100*l['time_share']:5.1f} % time  {'-' if fs is None else f'{100*fs:5.1f}'} % FLOPs")
print(" ", d["slow_layer"])
PY
done
for f in pipeline_data_bound pipeline_wide_model; do
  "$PY" - "$OUT/${f}_$TAG.json" <<'PY'
import json, sys
raw = open(sys.argv[1]).read()
d = json.loads(raw[raw.index("\n{") + 1:] if not raw.startswith("{") else raw)
print(sys.argv[1], d["pipeline"])
PY
done
