# Thirtieth session, call 4, one GPU: issue 16 target 2 at ebb929c (the startup's cuts, the lockless
# warm-up, the settle poll at 0.2 s), with the ResNet-50 history of call 1 (carried) and without:
#   C (cold)  empty CuPy and CUDA caches, as every earlier call;
#   W (warm)  copies of the first cold transfer run's CuPy and CUDA caches, for both sides (a machine
#             that has run autoconv before: its CuPy kernels compiled).
# Order: trC1 plainC1 trW1 plainW1 plainW2 trW2 plainC2 trC2 trC3 plainC3; then the winners re-timed
# side by side (compare_caches.py).
#   bash results/h100/thirtieth/call4.sh   (device tool: carry [".whl", ".probe/carry"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
TRACE=$ROOT/results/h100/thirtieth/trace
mkdir -p /tmp/hist && tar xzf .probe/carry/history_rn50.tgz -C /tmp/hist
tune() {  # name tree config history-dir warm(0/1) [extra args]
  local name=$1 tree=$2 config=$3 hist=$4 warm=$5; shift 5
  local left=$(( 300 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t/trace
  [ -n "$hist" ] && cp $hist/c.sqlite3 $hist/s.journal $t/
  [ "$warm" = 1 ] && cp -r /tmp/t_trC1/cupy /tmp/t_trC1/cc $t/
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
tune trC1 $ROOT $V /tmp/hist 0 --transfer
tune plainC1 $ROOT $V "" 0
tune trW1 $ROOT $V /tmp/hist 1 --transfer
tune plainW1 $ROOT $V "" 1
tune plainW2 $ROOT $V "" 1
tune trW2 $ROOT $V /tmp/hist 1 --transfer
tune plainC2 $ROOT $V "" 0
tune trC2 $ROOT $V /tmp/hist 0 --transfer
tune trC3 $ROOT $V /tmp/hist 0 --transfer
tune plainC3 $ROOT $V "" 0
caches=""; for n in plainC1 plainC2 plainC3 plainW1 plainW2 trC1 trC2 trC3 trW1 trW2; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
timeout 60 python3 results/h100/twentyeighth/compare_caches.py $V $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -11 $R/compare.log
du -sh /tmp/t_trC1/cupy /tmp/t_trC1/cc >> $R/times.txt 2>&1
cd /tmp && tar czf $OUT/r.tgz r
