#!/usr/bin/env bash
# The runs issues 38 and 42 still owe on an H200, in one device call (outputs under $OUT so a
# call cut short still returns what it has):  bash bench/owed_h200.sh
# (On another card it runs the same and names the card in $OUT/gpu.txt.) About 300 s.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
export LD_LIBRARY_PATH=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
export HEADROOM_HOME=/tmp/r/home; mkdir -p $HEADROOM_HOME
# 42: the counter's polls and each reading, traced; the sampler's cost alone and beside nvidia-smi.
timeout 25 python3 bench/sweep_phases.py --headroom dist/headroom --pairs 2 --modes on --trace --out $OUT/trace > $OUT/trace.log 2>&1; echo "trace rc $?"; grep "polled\|opened" $OUT/trace.log
timeout 20 python3 bench/nvml_call_cost.py 20 > $OUT/nvml_cost.txt 2>&1; cat $OUT/nvml_cost.txt
timeout 90 python3 bench/sweep_phases.py --headroom dist/headroom --pairs 10 --modes on,off --out $OUT/phases > $OUT/phases.log 2>&1; echo "phases rc $?"; tail -10 $OUT/phases.log
OUT=$OUT/energy PARTS=sweep PAIRS=4 SWEEP_BATCHES=256,1024,4096 timeout 50 bash bench/h200_energy_profile.sh dist/headroom > $OUT/energy.log 2>&1; echo "energy rc $?"; python3 bench/energy_check.py $OUT/energy > $OUT/energy_check.txt 2>&1; grep -v "^| sweep-" $OUT/energy_check.txt | tail -16
# 38: batch=auto of the ImageNet-style script, three times.
timeout 170 python3 bench/imagenet_sweep.py --headroom dist/headroom --python python3 --out $OUT/imagenet --sweeps 3 --only-sweeps > $OUT/imagenet.log 2>&1; echo "imagenet rc $?"
grep -v "warning:" $OUT/imagenet.log
