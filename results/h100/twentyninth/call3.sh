# Twenty-ninth session, call 3, one GPU: issue 16 target 2 again (the tree: studies overlapped, the
# compile queue by study, the first problem's points enumerated in the worker while its pool starts).
# ResNet-50 fp32 tuned from empty first (its storage and winners' cache are the history); then VGG-16
# (examples/vgg16.yaml, batch 8) under two protocols for the caches that hold no tuning history:
#   C  (cold)  every run from empty CuPy and CUDA compute caches (as every earlier call);
#   W  (warm)  every run from copies of the ResNet-50 run's CuPy and CUDA compute caches (a machine
#              that has run autoconv before; the history runs and the no-history runs alike);
# in the order trC1 plainC1 trW1 plainW1 plainW2 trW2 plainC2 trC2:
#   tr    the history (storage and winners' cache) copied in, --transfer
#   plain no history (empty storage and winners' cache), the default search
# then every VGG-16 run's winners re-timed side by side in one process (compare_caches.py), the
# ResNet-50 run's beside the committed 4x-budget run's (target 1), and the GPU tests of the worker's
# buffers, the compile pool and service, and the tuner.
#   bash results/h100/twentyninth/call3.sh   (device tool: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
tune() {  # name tree config history-dir warm(0/1) [extra args]
  local name=$1 tree=$2 config=$3 hist=$4 warm=$5; shift 5
  local left=$(( 500 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  [ -n "$hist" ] && cp $hist/c.sqlite3 $hist/s.journal $t/
  [ "$warm" = 1 ] && cp -r /tmp/t_rn50/cupy /tmp/t_rn50/cc $t/
  local s=$(date +%s.%N)
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout $(( left < 120 ? left : 120 )) python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1)
  echo "tune $name rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep "tuning took" $R/tune_$name.log | cut -c1-200
  local results_dir; results_dir=$(cd $tree && PYTHONPATH=/tmp/site:$tree python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp $results_dir/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz; gzip -f $R/tune_$name.log
}
tune rn50 $ROOT examples/resnet50.yaml "" 0
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal /tmp/hist/
du -sh /tmp/t_rn50/cupy /tmp/t_rn50/cc >> $R/times.txt 2>&1
tune trC1 $ROOT examples/vgg16.yaml /tmp/hist 0 --transfer
tune plainC1 $ROOT examples/vgg16.yaml "" 0
tune trW1 $ROOT examples/vgg16.yaml /tmp/hist 1 --transfer
tune plainW1 $ROOT examples/vgg16.yaml "" 1
tune plainW2 $ROOT examples/vgg16.yaml "" 1
tune trW2 $ROOT examples/vgg16.yaml /tmp/hist 1 --transfer
tune plainC2 $ROOT examples/vgg16.yaml "" 0
tune trC2 $ROOT examples/vgg16.yaml /tmp/hist 0 --transfer
caches=""; for n in plainC1 plainC2 plainW1 plainW2 trC1 trC2 trW1 trW2; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
timeout 100 python3 results/h100/twentyeighth/compare_caches.py examples/vgg16.yaml $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -9 $R/compare.log
timeout 40 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml \
  results/h100/resnet50_n32/results.json /tmp/t_rn50/c.sqlite3 $R/compare_rn50.json > $R/compare_rn50.log 2>&1
echo "compare rn50 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_rn50.log
left=$(( 585 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_worker_buffers.py \
  tests/search/test_killed_tune.py tests/gpu/test_gpu.py > $R/gpu_tests.log 2>&1; tail -3 $R/gpu_tests.log
cd /tmp && tar czf $OUT/r.tgz r
