# Thirty-third session, call 2 (nvidia-h200-x4: 4 H200s, 64 cores; two GPUs used): does the driver's
# compute cache, which NVRTC writes each compiled program to, make compiles wait on this host? (In
# call 1 each compile took ~1.45x its CPU time with 38 of 64 cores idle.)
#  1. examples/compile_throughput.py with 64 and 32 processes (each pool an empty compute cache),
#     cache on (one round), then CUDA_CACHE_DISABLE=1 (two rounds), then on again (one round);
#  2. ResNet-50 from empty storage and caches with CUDA_CACHE_DISABLE=1 (D) and without (C), two GPUs
#     and one: order twoD oneD oneC twoC twoD oneD... as time allows; host CPU every 0.5 s.
#   bash results/h100/thirtythird/call2.sh   (device tool, nvidia-h200-x4: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
thr() { python3 examples/compile_throughput.py examples/resnet50.yaml --processes 64,32 --rounds $1 --per-family 2; }
{ echo "== cache on"; thr 1; echo "== CUDA_CACHE_DISABLE=1"; CUDA_CACHE_DISABLE=1 thr 2; echo "== cache on"; thr 1; } > $R/throughput.log 2>&1
echo "throughput done at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
cpu_sampler() { while true; do echo "$(date +%s.%N) $(head -1 /proc/stat)"; sleep 0.5; done; }
tune() {  # name gpus disable(0|1)
  local name=$1 gpus=$2 disable=$3
  [ $(( $(date +%s) - T0 )) -gt 500 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$name; mkdir -p /tmp/t_$name; s=$(date +%s.%N)
  cpu_sampler > $R/cpu_$name.txt & SP=$!
  if [ "$disable" = 1 ]; then export CUDA_CACHE_DISABLE=1; else unset CUDA_CACHE_DISABLE; fi
  CUPY_CACHE_DIR=/tmp/t_$name/cupy CUDA_CACHE_PATH=/tmp/t_$name/cc timeout 80 python3 -m autoconv tune examples/resnet50.yaml --gpus $gpus --storage /tmp/t_$name/s.journal --cache /tmp/t_$name/c.sqlite3 > $R/tune_$name.log 2>&1
  rc=$?; kill $SP; unset CUDA_CACHE_DISABLE
  echo "tune $name rc=$rc start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$name.log | cut -c1-200
  cp results/resnet50/tune.json $R/tune_$name.json
}
tune twoD_a 0,1 1; tune oneD_a 0 1; tune oneC_a 0 0; tune twoC_a 0,1 0; tune twoD_b 0,1 1; tune oneD_b 0 1; tune oneC_b 0 0; tune twoC_b 0,1 0
cd /tmp && tar czf $OUT/r.tgz r
