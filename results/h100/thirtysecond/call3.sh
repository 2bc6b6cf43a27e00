# Thirty-second session, call 3, two GPUs of one host (nvidia-h200-x2): the GPU tests of the tuner,
# the runtime and the PyTorch op at this session's code (the runtime's untuned shapes enumerate
# through the new SearchSpace.points); then ResNet-50 from empty storage and caches on two GPUs and
# on one, order two one one two, as far as the call's time allows.
#   bash results/h100/thirtysecond/call3.sh   (device tool: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/search tests/runtime tests/cache \
  tests/torch/test_torch_gpu.py > $R/gpu_tests.txt 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/gpu_tests.txt
cpu_sampler() { while true; do echo "$(date +%s.%N) $(head -1 /proc/stat)"; sleep 0.5; done; }
tune() {  # name gpus
  [ $(( $(date +%s) - T0 )) -gt 510 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  cpu_sampler > $R/cpu_$1.txt & SP=$!
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 80 python3 -m autoconv tune examples/resnet50.yaml --gpus $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  rc=$?; kill $SP
  echo "tune $1 rc=$rc start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1.log | cut -c1-200
  cp results/resnet50/tune.json $R/tune_$1.json
}
tune two_a all; tune one_a 0; tune one_b 0; tune two_b all
cd /tmp && tar czf $OUT/r.tgz r
