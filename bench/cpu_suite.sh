#!/usr/bin/env bash
# The benchmark suite on this machine's CPU, in one command (after scripts/bootstrap.sh, which
# makes .venv with torch and builds nothing: this script builds the release binary itself):
#
#     bash bench/cpu_suite.sh [OUTDIR]
#
# Makes bench/.venv (the project's torch through a .pth file, plus Lightning 2.6.6 and accelerate
# 1.15.0 from PyPI), builds target/release/headroom, then runs side by side: fidelity (Headroom vs a
# torch.utils.benchmark loop), time to answer (Headroom vs Lightning vs accelerate), the matmul and
# copy workloads against torch.matmul and a tensor copy, worker start to first measured step, and
# prints every table. Raw JSON goes to OUTDIR (default bench/results/cpu-DATE).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-bench/results/cpu-$(date +%Y-%m-%d)}
mkdir -p "$OUT"
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || { echo "no .venv: run scripts/bootstrap.sh first" >&2; exit 2; }
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

BVENV=$ROOT/bench/.venv
if [ ! -x "$BVENV/bin/python" ]; then
  "$PY" -m venv "$BVENV"
fi
BSITE=$("$BVENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$SITE" > "$BSITE/headroom-venv.pth"
"$BVENV/bin/python" -m pip install -q --disable-pip-version-check lightning==2.6.6 accelerate==1.15.0
BPY=$BVENV/bin/python

# LIBTORCH_USE_PYTORCH only has to be set; the same value as scripts/test.sh keeps cargo from
# rebuilding torch-sys.
export LIBTORCH_USE_PYTORCH=$ROOT/.venv VIRTUAL_ENV=$ROOT/.venv PATH=$ROOT/.venv/bin:$PATH
cargo build --release -q -p headroom-cli
HR=$ROOT/target/release/headroom
export LD_LIBRARY_PATH=$SITE/torch/lib
THREADS=${THREADS:-$(nproc)}

echo "== fidelity (CPU, $THREADS threads)"
"$BPY" bench/fidelity.py --headroom "$HR" --python "$BPY" --device cpu --workloads mlp,cnn,gpt-tiny \
  --batches 1,16,64 --threads "$THREADS" --rounds 3 --out "$OUT/fidelity.json" | tee "$OUT/fidelity.md"

echo "== time to answer (CPU: mlp up to batch 512, where nothing runs out of memory)"
"$BPY" bench/time_to_answer.py --headroom "$HR" --python "$BPY" --device cpu --workload mlp --max-batch 512 \
  --threads "$THREADS" --out "$OUT/time_to_answer.json" | tee "$OUT/time_to_answer.md"

echo "== close to the limit: matmul and copy against PyTorch"
"$BPY" bench/close_to_limit.py --headroom "$HR" --python "$BPY" --device cpu --matmul-n 1024 --matmul-batches 1,4 \
  --copy-len 16777216 --copy-batches 1,4 --dtype f32 --threads "$THREADS" --out "$OUT/close_to_limit.json" \
  | tee "$OUT/close_to_limit.md"

echo "== worker start to first measured step"
"$BPY" bench/first_step.py --headroom "$HR" --device cpu --workload mlp --runs 5 --out "$OUT/first_step.json" \
  | tee "$OUT/first_step.md"
echo "results in $OUT"
