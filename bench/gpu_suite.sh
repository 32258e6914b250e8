#!/usr/bin/env bash
# The benchmark suite on the GPU host (an H200 with torch 2.11.0+cu130, Lightning 2.6.6 and
# accelerate 1.15.0 in its python3), given a `headroom` built against the same libtorch:
#
#     OUT=DIR bash bench/gpu_suite.sh dist/headroom [part...]
#
# Parts (all by default): answer (time to answer vs Lightning and accelerate), limit (matmul bf16
# and copy vs PyTorch), start (worker start to first step), oom (real OOMs then 100 steps),
# fidelity (samples/s vs a torch.utils.benchmark loop), timeline (where one sweep's wall time goes,
# point by point), observer (what `headroom run`'s observer costs a torchvision resnet50 script, and
# what it observed of it), usersweep (`run --sweep batch=auto` on a resnet50 script vs accelerate and
# Lightning). Tables on stdout, raw JSON in OUT. `headroom-worker` must sit beside the
# `headroom` given. BEFORE=PATH (an older `headroom`, in a folder of its own) and ROUNDS=N make
# `answer` run both builds N times, interleaved.
set -uo pipefail
HR=${1:-dist/headroom}; shift || true
PARTS=${*:-answer limit start oom fidelity}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
for part in $PARTS; do
  echo "== $part"
  case $part in
    answer) python3 bench/time_to_answer.py --headroom "$HR" --python python3 --device cuda --workload vit-tiny \
              ${BEFORE:+--before "$BEFORE"} --rounds "${ROUNDS:-1}" \
              --out "$OUT/time_to_answer.json" | tee "$OUT/time_to_answer.md" ;;
    limit) python3 bench/close_to_limit.py --headroom "$HR" --python python3 --device cuda --dtype bf16 \
              --matmul-n 8192 --matmul-batches 1,4,16 --copy-len 268435456 --copy-batches 1,4 \
              --out "$OUT/close_to_limit.json" | tee "$OUT/close_to_limit.md" ;;
    start) python3 bench/first_step.py --headroom "$HR" --device cuda --workload vit-tiny --runs 5 \
              --out "$OUT/first_step.json" | tee "$OUT/first_step.md" ;;
    oom) OUT="$OUT" bash bench/real_oom.sh "$HR" ;;
    fidelity) python3 bench/fidelity.py --headroom "$HR" --python python3 --device cuda \
              --workloads vit-tiny,gpt-tiny,cnn,mlp --batches 8,64,256 --rounds 2 \
              --out "$OUT/fidelity.json" | tee "$OUT/fidelity.md" ;;
    timeline) python3 bench/answer_timeline.py --headroom "$HR" --device cuda --workload vit-tiny \
              --out "$OUT/timeline.json" | tee "$OUT/timeline.md" ;;
    usersweep) python3 bench/user_sweep.py --headroom "$HR" --python python3 --out "$OUT/usersweep" \
              | tee "$OUT/usersweep.md" ;;
    observer) python3 bench/observer_overhead.py --headroom "$HR" --python python3 --device cuda \
              --model resnet50 --batch 128 --image 224 --workers 6 --steps 120 --rounds 3 \
              --out "$OUT/overhead.json" --observe-json "$OUT/observed-resnet50.json" | tee "$OUT/overhead.md" ;;
    *) echo "unknown part $part" >&2 ;;
  esac
done
