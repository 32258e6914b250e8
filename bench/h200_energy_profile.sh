#!/usr/bin/env bash
# Issues 41 and 42 on the GPU host (an H200, torch 2.11.0+cu130 in its python3), given a
# `headroom` built against the same libtorch with `headroom-worker` beside it:
#
#     OUT=DIR bash bench/h200_energy_profile.sh dist/headroom
#
# 1. `nvidia-smi` samples the GPU's power every 100 ms (SMI_MS) through everything below (each line
#    stamped with this host's clock as it arrives: `bench/energy_check.py` integrates it).
# 2. `headroom run` of a steady resnet50 loop (`bench/steady_cuda.py`, 30 s): its NVML energy
#    against nvidia-smi's power × time over the same steps.
# 3. A user-script sweep (`run --sweep batch=auto --max-batch 512`) of the same loop: each point's joules per
#    sample against nvidia-smi over the point's timed steps (from the loop's own step stamps).
# 4. A built-in sweep with the conditions sampler on and off, alternating, three pairs: the
#    sampler's cost on the sweep's wall time; its points' joules per sample.
# 4b. Built-in sweeps (the default search, and the three batches of 4 held for 200 steps): each point's joules per
#    sample against nvidia-smi over the point's own span (`conditions.from_unix`).
# 5. `headroom run --profile-window 20` against a plain run of the same loop (150 steps): what
#    the window costs and the operators it names.
# 6. `headroom numerics` on the resnet50 and a small transformer, cuda against a CPU copy, in
#    f32 and bf16: the time it takes and the largest error and where.
# MODES (default "on off"; "on coarse off" adds the sampler without its energy polling).
# SWEEP_BATCHES: the batches of part 4 (64,256,1024). RUN_S, MAX_BATCH, PAIRS and PROFILE_PAIRS shorten it (30, 512, 3, 2 by default); PARTS picks
# which of run, usersweep, sweep, builtin, numerics, profile to run (all by default).
# Raw output in OUT; `python3 bench/energy_check.py OUT` prints the tables.
set -uo pipefail
HR=${1:-dist/headroom}
OUT=${OUT:-h200-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export HEADROOM_HOME="$OUT/home"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > "$OUT/gpu.txt" 2>&1
python3 - "$OUT/power.txt" "${SMI_MS:-100}" <<'PY' &
import subprocess, sys, time
out = open(sys.argv[1], "w", buffering=1)
p = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw.instant,power.draw",
                      "--format=csv,noheader,nounits", "-lms", sys.argv[2]],
                     stdout=subprocess.PIPE, text=True)
for line in p.stdout:
    out.write(f"{time.time():.6f}, {line.strip()}\n")
PY
SMI=$!
sleep 2
S=bench/steady_cuda.py
PARTS=${PARTS:-run,usersweep,sweep,builtin,numerics,profile}
part() { [[ ",$PARTS," == *",$1,"* ]]; }
if part run; then
echo "== run"
"$HR" run --json -- python3 $S -b 128 --seconds "${RUN_S:-30}" \
  --stamps "$OUT/run.stamps" > "$OUT/run.json" 2> "$OUT/run.stderr"
fi
if part usersweep; then
echo "== user sweep"
"$HR" run --sweep batch=auto --max-batch "${MAX_BATCH:-512}" --json -- \
  python3 $S -b {batch} --seconds 120 --stamps "$OUT/usersweep.stamps" \
  > "$OUT/usersweep.json" 2> "$OUT/usersweep.stderr"
fi
if part sweep; then
echo "== built-in sweep, conditions on/off"
for i in $(seq "${PAIRS:-3}"); do for mode in ${MODES:-on off}; do
  s=$(date +%s.%N)
  HEADROOM_CONDITIONS=$mode "$HR" sweep --device cuda --workload cnn --batches "${SWEEP_BATCHES:-64,256,1024}" \
    --json > "$OUT/sweep-$mode-$i.json" 2> "$OUT/sweep-$mode-$i.stderr"
  e=$(date +%s.%N)
  echo "$mode $i $s $e" >> "$OUT/sweep.walls"
done; done
fi
if part builtin; then
echo "== built-in sweeps, each point against nvidia-smi (the search, then long points)"
for i in 1 2; do
  "$HR" sweep --device cuda --workload cnn --json > "$OUT/builtin-auto-$i.json" 2> "$OUT/builtin-auto-$i.stderr"
  "$HR" sweep --device cuda --workload cnn --batches 64,256,1024 --steps 200 --json \
    > "$OUT/builtin-long-$i.json" 2> "$OUT/builtin-long-$i.stderr"
done
fi
if part numerics; then
echo "== numerics (issue 45)"
for model in resnet50 transformer; do for dt in f32 bf16; do
  s=$(date +%s.%N)
  "$HR" numerics --dtype $dt --json -- python3 $S --model $model -b 32 --steps 6 \
    > "$OUT/numerics-$model-$dt.json" 2> "$OUT/numerics-$model-$dt.stderr"
  e=$(date +%s.%N)
  echo "$model $dt $s $e" >> "$OUT/numerics.walls"
done; done
fi
if part profile; then
echo "== profile window"
for i in $(seq "${PROFILE_PAIRS:-2}"); do for mode in plain window; do
  extra=""; [ $mode = window ] && extra="--profile-window 20"
  s=$(date +%s.%N)
  "$HR" run $extra --json -- python3 $S -b 128 --steps 150 > "$OUT/profile-$mode-$i.json" \
    2> "$OUT/profile-$mode-$i.stderr"
  e=$(date +%s.%N)
  echo "$mode $i $s $e" >> "$OUT/profile.walls"
done; done
fi
kill $SMI 2>/dev/null; pkill -f "nvidia-smi --query-gpu=power" 2>/dev/null
find "$OUT/home" -name '*.json' -size +1M -delete 2>/dev/null
ls -la "$OUT"
