# Thirty-second session, call 5, two of the four GPUs of a 64-core host (nvidia-h200-x4): what the
# host's CPU count allows (issue 16, target 4). ResNet-50 from empty storage and caches with
# `--gpus 0,1` and `--gpus 0`, order two one one two, this session's code (528331c); host CPU sampled
# from /proc/stat every 0.5 s.
#   bash results/h100/thirtysecond/call5.sh   (device tool, nvidia-h200-x4: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
cpu_sampler() { while true; do echo "$(date +%s.%N) $(head -1 /proc/stat)"; sleep 0.5; done; }
tune() {  # name gpus
  [ $(( $(date +%s) - T0 )) -gt 230 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  cpu_sampler > $R/cpu_$1.txt & SP=$!
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 80 python3 -m autoconv tune examples/resnet50.yaml --gpus $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  rc=$?; kill $SP
  echo "tune $1 rc=$rc start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1.log | cut -c1-200
  cp results/resnet50/tune.json $R/tune_$1.json
}
tune two_a 0,1; tune one_a 0; tune one_b 0; tune two_b 0,1
cd /tmp && tar czf $OUT/r.tgz r
