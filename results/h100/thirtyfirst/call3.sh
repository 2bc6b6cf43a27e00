# Thirty-first session, call 3, one GPU: issue 16 target 2 at 51cb31c (compiler processes import only
# NVRTC's binding, 6e58474; a transfer study's further picks by measured family times, 51cb31c),
# with call 1's ResNet-50 history (carried); "p" = c392ef9, the tree of call 2 (carried), for two
# transfer runs beside the new ones. From empty CuPy and CUDA caches; alternated; then the winners
# re-timed side by side, and the compile service's tests (CuPy installed: its processes must not
# import it).
#   bash results/h100/thirtyfirst/call3.sh   (device tool: carry [".whl", ".probe/carry"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
TRACE=$ROOT/results/h100/thirtieth/trace  # (the thirtieth session's tracer: the calls ran a byte-identical copy)
mkdir -p /tmp/hist /tmp/prev && tar xzf .probe/carry/history31.tgz -C /tmp/hist && tar xzf .probe/carry/c392ef9.tgz -C /tmp/prev
HISTORY_BYTES=$(stat -c %s /tmp/hist/s.journal)
tune() {  # name tree config history-dir [extra args]
  local name=$1 tree=$2 config=$3 hist=$4; shift 4
  local left=$(( 430 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t/trace
  [ -n "$hist" ] && cp $hist/* $t/
  local s=$(date +%s.%N)
  (cd $tree && PYTHONPATH=/tmp/site:$tree:$TRACE AUTOCONV_TRACE_DIR=$t/trace CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc \
    timeout $(( left < 150 ? left : 150 )) python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1)
  echo "tune $name rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep "tuning took" $R/tune_$name.log | cut -c1-200
  local results_dir; results_dir=$(cd $tree && PYTHONPATH=/tmp/site:$tree python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp $tree/$results_dir/tune.json $R/tune_$name.json 2>/dev/null || cp $results_dir/tune.json $R/tune_$name.json
  (cd $t/trace && for f in *.txt; do echo "$f $(head -1 $f) | $(tail -1 $f)"; done > $R/trace_$name.txt)
  [ -n "$hist" ] && tail -c +$(( HISTORY_BYTES + 1 )) $t/s.journal | gzip > $R/journal_tail_$name.gz
  gzip -f $R/tune_$name.log
}
V=examples/vgg16.yaml
tune tr1 $ROOT $V /tmp/hist --transfer
tune plain1 $ROOT $V ""
tune trP1 /tmp/prev $V /tmp/hist --transfer
tune tr2 $ROOT $V /tmp/hist --transfer
tune plain2 $ROOT $V ""
tune tr3 $ROOT $V /tmp/hist --transfer
tune trP2 /tmp/prev $V /tmp/hist --transfer
tune plain3 $ROOT $V ""
tune tr4 $ROOT $V /tmp/hist --transfer
tune plain4 $ROOT $V ""
caches=""; for n in plain1 plain2 plain3 plain4 tr1 tr2 tr3 tr4 trP1 trP2; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
timeout 50 python3 results/h100/twentyeighth/compare_caches.py $V $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -11 $R/compare.log
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_compile_service.py > $R/tests.log 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/tests.log
cd /tmp && tar czf $OUT/r.tgz r
