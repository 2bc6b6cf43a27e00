# Thirty-third session, call 6 (nvidia-h200: one H200, 16 cores): the verification inputs made before
# the GPU's lock is taken (this session's change to autoconv/gpu/worker.py).
#  1. the GPU tests of the GPU worker: pytest -m gpu tests/gpu/test_worker_buffers.py test_memory.py
#     test_16bit.py test_exclusive.py test_worker_waits_for_the_gpu.py test_launched_worker.py;
#  2. ResNet-50 from empty storage and caches on one GPU, new tree against the old (HEAD before the
#     change, .probe/c33/old.tgz, carried), order new old, as the remaining device time allows.
#   bash results/h100/thirtythird/call6.sh   (device tool: carry [".whl", ".probe/c33"])
set -u
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
mkdir -p /tmp/old && tar xzf .probe/c33/old.tgz -C /tmp/old
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_worker_buffers.py tests/gpu/test_memory.py \
  tests/gpu/test_16bit.py tests/gpu/test_exclusive.py tests/gpu/test_worker_waits_for_the_gpu.py \
  tests/gpu/test_launched_worker.py > $R/gpu_tests.txt 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/gpu_tests.txt
tune() {  # name tree
  local name=$1 tree=$2
  [ $(( $(date +%s) - T0 )) -gt 180 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$name; mkdir -p /tmp/t_$name
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=/tmp/t_$name/cupy CUDA_CACHE_PATH=/tmp/t_$name/cc timeout 75 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/t_$name/s.journal --cache /tmp/t_$name/c.sqlite3 > $R/tune_$name.log 2>&1; cp results/resnet50/tune.json $R/tune_$name.json)
  echo "tune $name at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$name.log | cut -c1-220
}
tune new $PWD; tune old /tmp/old
cp -r $R $OUT/
