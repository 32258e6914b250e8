#!/usr/bin/env bash
# Per-point detail of quiet sweeps on the GPU machine: default timing against long fixed timing.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
D=$(mktemp -d); cp dist/headroom dist/headroom-worker "$D/"; export HEADROOM_HOME=$D
for dev in cuda cpu; do
  for i in 1 2 3; do $D/headroom sweep --device $dev --workload mlp --max-batch 512 --json > $OUT/$dev-d$i.json 2>/dev/null; done
  for i in 1 2 3; do $D/headroom sweep --device $dev --workload mlp --max-batch 512 --steps 300 --json > $OUT/$dev-l$i.json 2>/dev/null; done
  python3 bench/probe/noise_detail.py $OUT/$dev-*.json
done
cd $OUT && tar czf all.tgz *.json && rm *.json
