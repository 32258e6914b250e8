#!/usr/bin/env bash
# bench/noise_control.sh on the GPU machine: its 16 CPU cores, then its H200 (dist/ holds the binaries).
set -u
OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
D=$(mktemp -d); cp dist/headroom dist/headroom-worker "$D/"
nproc
bash bench/noise_control.sh "$D/headroom" python3 "$OUT/cpu" cpu 3
python3 bench/noise_spread.py "$OUT/cpu"
bash bench/noise_control.sh "$D/headroom" python3 "$OUT/cuda" cuda 3
python3 bench/noise_spread.py "$OUT/cuda"
cd "$OUT" && tar czf noise.tgz cpu cuda && rm -rf cpu cuda
