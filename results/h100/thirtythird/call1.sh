# Thirty-third session, call 1 (nvidia-h200-x4: 4 H200s, 64 cores; two of the GPUs used): what the
# host's CPUs allow (issue 16, target 4).
#  1. the host's CPU topology (lscpu);
#  2. compile capacity: 256 ResNet-50 fp32 candidates compiled with 64, 48, 32, 16, 8, 64 processes
#     (capacity.py);
#  3. ResNet-50 from empty storage and caches: two GPUs (default workers), one GPU (default: 4 workers),
#     one GPU with 8 workers; order two one one8 one8 one two; host CPU from /proc/stat every 0.5 s.
#   bash results/h100/thirtythird/call1.sh   (device tool, nvidia-h200-x4: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
{ lscpu; grep -c processor /proc/cpuinfo; } > $R/lscpu.txt 2>&1
python3 results/h100/thirtythird/capacity.py $R/capacity.json 256 64 48 32 16 8 64 > $R/capacity.log 2>&1
echo "capacity done at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
cpu_sampler() { while true; do echo "$(date +%s.%N) $(head -1 /proc/stat)"; sleep 0.5; done; }
tune() {  # name gpus [args]
  local name=$1 gpus=$2; shift 2
  [ $(( $(date +%s) - T0 )) -gt 470 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$name; mkdir -p /tmp/t_$name; s=$(date +%s.%N)
  cpu_sampler > $R/cpu_$name.txt & SP=$!
  CUPY_CACHE_DIR=/tmp/t_$name/cupy CUDA_CACHE_PATH=/tmp/t_$name/cc timeout 80 python3 -m autoconv tune examples/resnet50.yaml --gpus $gpus --storage /tmp/t_$name/s.journal --cache /tmp/t_$name/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  rc=$?; kill $SP
  echo "tune $name rc=$rc start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$name.log | cut -c1-200
  cp results/resnet50/tune.json $R/tune_$name.json
}
tune two_a 0,1; tune one_a 0; tune one8_a 0 --workers-per-gpu 8; tune one8_b 0 --workers-per-gpu 8; tune one_b 0; tune two_b 0,1
cd /tmp && tar czf $OUT/r.tgz r
