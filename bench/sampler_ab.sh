#!/usr/bin/env bash
# The conditions sampler's cost on a built-in sweep, this build (dist/) against an earlier one
# (dist/old/), on the GPU host in one device call (outputs under $OUT):
#   bash bench/sampler_ab.sh
# 1. this build traced (each reading, each settle, the polls); 2. rounds of on / off / the
# earlier build on, in turn; 3. this build beside `nvidia-smi -lms 100` with the energy check;
# 4. the ImageNet-style batch=auto sweep three times (issue 38). About 400 s.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
export LD_LIBRARY_PATH=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
export HEADROOM_HOME=/tmp/r/home; mkdir -p $HEADROOM_HOME
ROUNDS=${ROUNDS:-16}
timeout 25 python3 bench/sweep_phases.py --headroom dist/headroom --pairs 2 --modes on --trace --out $OUT/trace > $OUT/trace.log 2>&1; echo "trace rc $?"; grep "polled\|opened\|settled" $OUT/trace.log | head -12
timeout 200 python3 bench/sweep_phases.py --headroom dist/headroom --pairs $ROUNDS --modes on@dist/old/headroom,on,off --out $OUT/phases > $OUT/phases.log 2>&1; echo "phases rc $?"; tail -12 $OUT/phases.log
OUT=$OUT/energy PARTS=sweep PAIRS=4 SWEEP_BATCHES=256,1024,4096 timeout 50 bash bench/h200_energy_profile.sh dist/headroom > $OUT/energy.log 2>&1; echo "energy rc $?"; python3 bench/energy_check.py $OUT/energy > $OUT/energy_check.txt 2>&1; grep -v "^| sweep-" $OUT/energy_check.txt | tail -16
timeout 150 python3 bench/imagenet_sweep.py --headroom dist/headroom --python python3 --out $OUT/imagenet --sweeps 3 --only-sweeps > $OUT/imagenet.log 2>&1; echo "imagenet rc $?"
grep -v "warning:" $OUT/imagenet.log | grep -v "^   start"
