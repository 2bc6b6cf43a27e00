# Thirtieth session, call 3, one GPU: issue 16 target 2, the startup's cuts (call 2's, and the GPU
# worker's warm-up without the GPU's lock: 8efc480) against the tree before them (a1ea327, "old"),
# cold caches, every VGG-16 run with the same ResNet-50 history (call 1's, carried).
# Order: trN trO plainN plainO trO trN plainO plainN trN plainN trO plainO (as time allows); then the
# winners re-timed side by side (compare_caches.py), and the GPU tests.
#   bash results/h100/thirtieth/call3.sh   (device tool: carry [".whl", ".probe/carry"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
TRACE=$ROOT/results/h100/thirtieth/trace
mkdir -p /tmp/old /tmp/hist && tar xzf .probe/carry/old_a1ea327.tgz -C /tmp/old && tar xzf .probe/carry/history_rn50.tgz -C /tmp/hist
tune() {  # name tree config history-dir [extra args]
  local name=$1 tree=$2 config=$3 hist=$4; shift 4
  local left=$(( 400 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t/trace
  [ -n "$hist" ] && cp $hist/c.sqlite3 $hist/s.journal $t/
  local s=$(date +%s.%N)
  (cd $tree && PYTHONPATH=/tmp/site:$tree:$TRACE AUTOCONV_TRACE_DIR=$t/trace CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc \
    timeout $(( left < 120 ? left : 120 )) python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1)
  echo "tune $name rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep "tuning took" $R/tune_$name.log | cut -c1-200
  local results_dir; results_dir=$(cd $tree && PYTHONPATH=/tmp/site:$tree python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp $tree/$results_dir/tune.json $R/tune_$name.json 2>/dev/null || cp $results_dir/tune.json $R/tune_$name.json
  (cd $t/trace && for f in *.txt; do echo "$f $(head -1 $f) | $(tail -1 $f)"; done > $R/trace_$name.txt)
  gzip -c $t/s.journal > $R/journal_$name.gz; gzip -f $R/tune_$name.log
}
V=examples/vgg16.yaml
tune trN1 $ROOT $V /tmp/hist --transfer
tune trO1 /tmp/old $V /tmp/hist --transfer
tune plainN1 $ROOT $V ""
tune plainO1 /tmp/old $V ""
tune trO2 /tmp/old $V /tmp/hist --transfer
tune trN2 $ROOT $V /tmp/hist --transfer
tune plainO2 /tmp/old $V ""
tune plainN2 $ROOT $V ""
tune trN3 $ROOT $V /tmp/hist --transfer
tune plainN3 $ROOT $V ""
tune trO3 /tmp/old $V /tmp/hist --transfer
tune plainO3 /tmp/old $V ""
caches=""; for n in plainN1 plainO1 plainN2 plainO2 plainN3 plainO3 trN1 trO1 trN2 trO2 trN3 trO3; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
timeout 100 python3 results/h100/twentyeighth/compare_caches.py $V $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -11 $R/compare.log
left=$(( 585 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_worker_buffers.py \
  tests/search/test_killed_tune.py tests/gpu/test_gpu.py > $R/gpu_tests.log 2>&1; tail -3 $R/gpu_tests.log
cd /tmp && tar czf $OUT/r.tgz r
