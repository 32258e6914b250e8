#!/usr/bin/env bash
# Captures what nvidia-smi says about the processes on the GPU while a torch process holds memory
# (for the parser fixtures of the accelerator-sharing check).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -c "import torch,time; x=torch.empty(2<<30,dtype=torch.uint8,device='cuda'); y=x.float().sum(); torch.cuda.synchronize(); time.sleep(25)" &
P=$!
sleep 12
{
  echo "# pid of the torch process as this shell sees it: $P"
  echo "## nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits"
  nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits
  echo "## with -i 0 and gpu_uuid"
  nvidia-smi -i 0 --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv,noheader,nounits
  echo "## with header"
  nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv
  echo "## nvidia-smi (plain)"
  nvidia-smi
  echo "## time of one query"
  /usr/bin/time -f "%e s" nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits
  echo "## ps"
  ps -o pid,comm,args -p $P
  echo "## pid namespace"; ls -l /proc/self/ns/pid
} > "$OUT/gpu_apps.txt" 2>&1
wait $P
echo "## after exit" >> "$OUT/gpu_apps.txt"
nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits >> "$OUT/gpu_apps.txt" 2>&1
cat "$OUT/gpu_apps.txt"
