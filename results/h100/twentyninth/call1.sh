# Twenty-ninth session, call 1, one H100: issue 16 target 2, a worker's next study begun while the one
# in flight waits on its last candidates (new: the working tree) against one study at a time (old:
# ceba2a7, unpacked into .probe/old29). First the GPU worker's buffer tests; then ResNet-50 fp32 tuned
# from empty (its storage and winners' cache are the history); then VGG-16 (examples/vgg16.yaml,
# batch 8) in the order tr1 plain1 old1 old2 plain2 tr2:
#   tr    the history copied in, --transfer (new)
#   old   the history copied in, --transfer (old)
#   plain no history (empty storage and cache), the default search (new)
# every run from empty CuPy and CUDA caches, its journal kept; then every VGG-16 run's winners
# re-timed side by side in one process (compare_caches.py), the ResNet-50 run's beside the committed
# 4x-budget run's (target 1), and the tuner's GPU tests.
#   bash results/h100/twentyninth/call1.sh   (device tool: carry [".whl", ".probe/old29"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_worker_buffers.py > $R/gpu_buffers.log 2>&1
echo "buffers tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/gpu_buffers.log
tune() {  # name tree config history-dir [extra args]
  local name=$1 tree=$2 config=$3 hist=$4; shift 4
  local left=$(( 500 - ($(date +%s) - T0) )); [ $left -lt 60 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  [ -n "$hist" ] && cp $hist/c.sqlite3 $hist/s.journal $t/
  local s=$(date +%s.%N)
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout $(( left < 150 ? left : 150 )) python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1)
  echo "tune $name rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep "tuning took" $R/tune_$name.log | cut -c1-200
  local results_dir; results_dir=$(cd $tree && PYTHONPATH=/tmp/site:$tree python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp $results_dir/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz; gzip -f $R/tune_$name.log
}
OLD=$ROOT/.probe/old29
tune rn50 $ROOT examples/resnet50.yaml ""
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal /tmp/hist/
tune tr1 $ROOT examples/vgg16.yaml /tmp/hist --transfer
tune plain1 $ROOT examples/vgg16.yaml ""
tune old1 $OLD examples/vgg16.yaml /tmp/hist --transfer
tune old2 $OLD examples/vgg16.yaml /tmp/hist --transfer
tune plain2 $ROOT examples/vgg16.yaml ""
tune tr2 $ROOT examples/vgg16.yaml /tmp/hist --transfer
timeout 100 python3 results/h100/twentyeighth/compare_caches.py examples/vgg16.yaml $R/compare.json \
  plain1=/tmp/t_plain1/c.sqlite3 plain2=/tmp/t_plain2/c.sqlite3 tr1=/tmp/t_tr1/c.sqlite3 \
  tr2=/tmp/t_tr2/c.sqlite3 old1=/tmp/t_old1/c.sqlite3 old2=/tmp/t_old2/c.sqlite3 > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -7 $R/compare.log
timeout 60 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml \
  results/h100/resnet50_n32/results.json /tmp/t_rn50/c.sqlite3 $R/compare_rn50.json > $R/compare_rn50.log 2>&1
echo "compare rn50 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_rn50.log
left=$(( 580 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left python3 -m pytest -q -p no:cacheprovider -m gpu tests/search/test_killed_tune.py \
  tests/gpu/test_gpu.py -k "tune or cache or killed" > $R/gpu_tests.log 2>&1; tail -2 $R/gpu_tests.log
cd /tmp && tar czf $OUT/r.tgz r
