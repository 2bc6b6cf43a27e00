# device call 2 (twentieth session), asked for an H100: the GPU tests of the TMA family (its space's
# register estimate fixed) and of the search; then ResNet-50 fp32 from empty with this code (new,
# 5562d15: half the patience while the best is a neighbour's winner) and without it (old, 8be9540,
# .probe/old20); each one's winners re-timed beside the committed 4x-budget run; then VGG-16 with
# the new run's ResNet-50 history (its winners' cache and journal) and without, order
# hist_new plain_new hist_old plain_new2 hist_new2. Every tune from empty compute and CuPy caches.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=/tmp/r; rm -rf $R; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rfs tests/emulator/test_wgmma_tma_family.py tests/search > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/gpu_tests.log
tune() {  # name code-root config results-folder history-dir
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 60 ] && { echo "tune $1 skipped ($left s left)" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  [ -n "$5" ] && cp $5/c.sqlite3 $5/s.journal /tmp/t_$1/
  (cd $2 && CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc PYTHONPATH=/tmp/site:$PWD timeout $(( left < 150 ? left : 150 )) python3 -m autoconv tune $3 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1.log | cut -c1-200
  cp $2/$4/tune.json $R/tune_$1.json; gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
compare() {  # name
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "compare $1 skipped" | tee -a $R/times.txt; return; }
  timeout $(( left < 90 ? left : 90 )) python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/t_$1/c.sqlite3 $R/compare_$1.json > $R/compare_$1.log 2>&1
  echo "compare $1 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_$1.log
}
tune rn50_new . examples/resnet50.yaml results/resnet50 ""
tune rn50_old .probe/old20 examples/resnet50.yaml results/resnet50 ""
mkdir -p /tmp/hist && cp /tmp/t_rn50_new/c.sqlite3 /tmp/t_rn50_new/s.journal /tmp/hist/
tune vgg_hist_new . examples/vgg16.yaml results/vgg16 /tmp/hist
tune vgg_plain_new . examples/vgg16.yaml results/vgg16 ""
tune vgg_hist_old .probe/old20 examples/vgg16.yaml results/vgg16 /tmp/hist
compare rn50_new
compare rn50_old
tune vgg_plain_new2 . examples/vgg16.yaml results/vgg16 ""
tune vgg_hist_new2 . examples/vgg16.yaml results/vgg16 /tmp/hist
cd /tmp && tar czf $OUT/r.tgz r
