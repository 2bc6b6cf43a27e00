# device call 4 (nineteenth session): the GPU tests of tests/gpu and tests/search at this tree,
# then ResNet-50 (--run-time-sizes, empty caches) on two GPUs and one, order 2 1 1 2.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R; T0=$(date +%s); NEW=$PWD
export PYTHONPATH=/tmp/site:$NEW
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
timeout 170 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/search -x > $R/gpu_tests.log 2>&1; echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" >> $R/times.txt
tune() {  # name gpus
  [ $(( $(date +%s) - T0 )) -gt 340 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 100 python3 -m autoconv tune examples/resnet50.yaml --gpus $2 --run-time-sizes --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp results/resnet50/tune.json $R/tune_$1.json
  gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune two_a all; tune one_a 0; tune one_b 0; tune two_b all
cd $OUT && tar czf r.tgz r && rm -rf r
tar xzf r.tgz -O r/times.txt; tar xzf r.tgz -O r/gpu_tests.log | tail -3
