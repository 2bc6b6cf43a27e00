# Thirtieth session, call 1, one GPU: where a transfer run's fixed costs go (issue 16 target 2).
# - micro: import times, CUDA's start, the GPU worker's warm-up with an empty and a warm CuPy cache;
# - ResNet-50 fp32 from empty (the history of the calls that follow: its storage and winners' cache
#   come back, gzipped, to be carried; and target 1 again);
# - VGG-16 (examples/vgg16.yaml, batch 8): tr, plain, tr, every Python process traced
#   (trace/sitecustomize.py), from empty CuPy and CUDA caches;
# - one transfer run in a single process (--workers-per-gpu 1) under cProfile.
#   bash results/h100/thirtieth/call1.sh   (device tool: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
TRACE=$ROOT/results/h100/thirtieth/trace
tune() {  # name config history-dir [extra args]
  local name=$1 config=$2 hist=$3; shift 3
  local left=$(( 540 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t/trace
  [ -n "$hist" ] && cp $hist/c.sqlite3 $hist/s.journal $t/
  local s=$(date +%s.%N)
  PYTHONPATH=/tmp/site:$ROOT:$TRACE AUTOCONV_TRACE_DIR=$t/trace CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc \
    timeout $(( left < 120 ? left : 120 )) python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  echo "tune $name rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep "tuning took" $R/tune_$name.log | cut -c1-200
  local results_dir; results_dir=$(python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp $results_dir/tune.json $R/tune_$name.json
  (cd $t/trace && for f in *.txt; do echo "$f $(head -1 $f) | $(tail -1 $f)"; done > $R/trace_$name.txt)
  gzip -c $t/s.journal > $R/journal_$name.gz; gzip -f $R/tune_$name.log
}
{ for i in 1 2; do /usr/bin/time -f "import fleet %e s" python3 -c "import autoconv.search.fleet"
  /usr/bin/time -f "import cupy + device count %e s" python3 -c "import cupy; cupy.cuda.runtime.getDeviceCount()"
  /usr/bin/time -f "import cupy %e s" python3 -c "import cupy"; done
  python3 -X importtime -c "import autoconv.search.fleet" 2>&1 | sort -t'|' -k2 -n | tail -30
  rm -rf /tmp/wu; CUPY_CACHE_DIR=/tmp/wu python3 results/h100/thirtieth/warm_up.py
  CUPY_CACHE_DIR=/tmp/wu python3 results/h100/thirtieth/warm_up.py; ls -la /tmp/wu; } > $R/micro.txt 2>&1
echo "micro at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
tune rn50 examples/resnet50.yaml ""
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal /tmp/hist/
(cd /tmp/hist && tar czf $R/history_rn50.tgz c.sqlite3 s.journal)
tune trC1 examples/vgg16.yaml /tmp/hist --transfer
tune plainC1 examples/vgg16.yaml ""
tune trC2 examples/vgg16.yaml /tmp/hist --transfer
t=/tmp/t_prof; rm -rf $t; mkdir -p $t; cp /tmp/hist/* $t/
CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 100 python3 -m cProfile -o $R/prof_tr1.out -m autoconv tune examples/vgg16.yaml \
  --storage $t/s.journal --cache $t/c.sqlite3 --transfer --workers-per-gpu 1 > $R/tune_prof.log 2>&1
echo "prof rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_prof.log
python3 -c "import pstats,sys; p=pstats.Stats(sys.argv[1]); p.sort_stats('cumulative').print_stats(60)" $R/prof_tr1.out > $R/prof_tr1.txt 2>&1
timeout 40 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml \
  results/h100/resnet50_n32/results.json /tmp/t_rn50/c.sqlite3 $R/compare_rn50.json > $R/compare_rn50.log 2>&1
echo "compare rn50 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_rn50.log
cd /tmp && tar czf $OUT/r.tgz r
