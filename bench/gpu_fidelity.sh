#!/usr/bin/env bash
# Fidelity on the GPU host: OUT=... bash bench/gpu_fidelity.sh dist/headroom
set -uo pipefail
HR=${1:-dist/headroom}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
# Fidelity on the GPU: Headroom vs a hand-written PyTorch loop, same model and batch.
python3 bench/fidelity.py --headroom "$HR" --python python3 --device cuda --workloads vit-tiny,gpt-tiny,cnn,mlp \
  --batches 8,64,256 --rounds 2 --out "$OUT/fidelity-gpu.json" | tee "$OUT/fidelity-gpu.md"
