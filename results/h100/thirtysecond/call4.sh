# Thirty-second session, call 4, one GPU: this session's code (ef42755): ResNet-50 from empty (target 1;
# its storage, snapshot and winners' cache are the history), then VGG-16 (batch 8) tr and plain
# alternated from empty CuPy and CUDA caches, as long as the call's time allows, then the winners
# re-timed side by side.
#   bash results/h100/thirtysecond/call4.sh   (device tool: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
TRACE=$ROOT/results/h100/thirtieth/trace  # (the thirtieth session's tracer: the calls ran a byte-identical copy)
tune() {  # name config history-dir [extra args]
  local name=$1 config=$2 hist=$3; shift 3
  local left=$(( 400 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t/trace
  [ -n "$hist" ] && cp $hist/* $t/
  local s=$(date +%s.%N)
  PYTHONPATH=/tmp/site:$ROOT:$TRACE AUTOCONV_TRACE_DIR=$t/trace CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc \
    timeout $(( left < 150 ? left : 150 )) python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  echo "tune $name rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep "tuning took" $R/tune_$name.log | cut -c1-200
  local results_dir; results_dir=$(python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp $results_dir/tune.json $R/tune_$name.json
  (cd $t/trace && for f in *.txt; do echo "$f $(head -1 $f) | $(tail -1 $f)"; done > $R/trace_$name.txt)
  gzip -f $R/tune_$name.log
}
tune rn50 examples/resnet50.yaml ""
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal* /tmp/hist/ && rm -f /tmp/hist/*.flock
ls -la /tmp/hist >> $R/times.txt
timeout 40 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml \
  results/h100/resnet50_n32/results.json /tmp/t_rn50/c.sqlite3 $R/compare_rn50.json > $R/compare_rn50.log 2>&1
echo "compare rn50 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_rn50.log
V=examples/vgg16.yaml
tune plain1 $V ""
tune tr1 $V /tmp/hist --transfer
tune tr2 $V /tmp/hist --transfer
tune plain2 $V ""
tune plain3 $V ""
tune tr3 $V /tmp/hist --transfer
tune tr4 $V /tmp/hist --transfer
tune plain4 $V ""
caches=""; for n in plain1 plain2 plain3 plain4 tr1 tr2 tr3 tr4; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
timeout 50 python3 results/h100/twentyeighth/compare_caches.py $V $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -9 $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
