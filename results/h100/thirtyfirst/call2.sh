# Thirty-first session, call 2, one GPU (tree: the commits after call 1 up to this script's):
# - the GPU tests of the worker, the launched worker, the killed tune and tests/gpu/test_gpu.py;
# - what a compiler process pays before its first compilation (compile_imports.py);
# - VGG-16 (batch 8) tr and plain alternated, from empty CuPy and CUDA caches, with call 1's
#   ResNet-50 history (carried); each transfer run's own records of the journal come back, for the
#   transfer studies' trial by trial account (which candidate found each best).
#   bash results/h100/thirtyfirst/call2.sh   (device tool: carry [".whl", ".probe/carry"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
TRACE=$ROOT/results/h100/thirtieth/trace  # (the thirtieth session's tracer: the calls ran a byte-identical copy)
mkdir -p /tmp/hist && tar xzf .probe/carry/history31.tgz -C /tmp/hist
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_worker_buffers.py tests/gpu/test_launched_worker.py \
  tests/search/test_killed_tune.py tests/gpu/test_gpu.py > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/gpu_tests.log
timeout 60 python3 results/h100/thirtyfirst/compile_imports.py > $R/compile_imports.txt 2>&1
echo "compile imports at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
HISTORY_BYTES=$(stat -c %s /tmp/hist/s.journal)
tune() {  # name config history-dir [extra args]
  local name=$1 config=$2 hist=$3; shift 3
  local left=$(( 520 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
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
  if [ -n "$hist" ]; then tail -c +$(( HISTORY_BYTES + 1 )) $t/s.journal | gzip > $R/journal_tail_$name.gz; else gzip -c $t/s.journal > $R/journal_$name.gz; fi
  gzip -f $R/tune_$name.log
}
V=examples/vgg16.yaml
tune tr1 $V /tmp/hist --transfer
tune plain1 $V ""
tune tr2 $V /tmp/hist --transfer
tune plain2 $V ""
tune tr3 $V /tmp/hist --transfer
tune plain3 $V ""
caches=""; for n in plain1 plain2 plain3 tr1 tr2 tr3; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
timeout 45 python3 results/h100/twentyeighth/compare_caches.py $V $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -7 $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
