# Thirty-first session, call 1, one GPU: issue 16 target 2 after the journal's snapshot (279fe62) and
# the GPU workers' warm-up turns (the commit after it), against f8239f9 ("old", carried).
# - warm-up: three GPU workers' warm-ups at once from an empty CuPy cache, turns 0 1 2 against 0 0 0;
# - ResNet-50 from empty with the new tree (target 1 again; its storage, with the snapshot its workers
#   wrote, and its winners' cache are the history of the VGG-16 transfer runs, new and old alike);
# - VGG-16 (batch 8) from empty CuPy and CUDA caches: tr (that history, --transfer) and plain (no
#   history), new (N) and old (O), alternated as time allows; every process traced;
# - the winners re-timed side by side (compare_caches.py), ResNet-50's against the committed run's.
#   bash results/h100/thirtyfirst/call1.sh   (device tool: carry [".whl", ".probe/carry"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
TRACE=$ROOT/results/h100/thirtieth/trace  # (the thirtieth session's tracer: the calls ran a byte-identical copy)
mkdir -p /tmp/old && tar xzf .probe/carry/old_f8239f9.tgz -C /tmp/old
tune() {  # name tree config history-dir [extra args]
  local name=$1 tree=$2 config=$3 hist=$4; shift 4
  local left=$(( 500 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
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
  gzip -f $R/tune_$name.log
}
for turns in "0 1 2" "0 0 0" "0 0 0" "0 1 2"; do
  rm -rf /tmp/wu; CUPY_CACHE_DIR=/tmp/wu timeout 60 python3 results/h100/thirtyfirst/warm_up_turns.py $turns
done > $R/warm_up_turns.txt 2>&1
echo "warm-up turns at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "all done" $R/warm_up_turns.txt
tune rn50 $ROOT examples/resnet50.yaml ""
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal* /tmp/hist/ && rm -f /tmp/hist/*.flock
ls -la /tmp/hist >> $R/times.txt
(cd /tmp/hist && tar czf $R/history_rn50.tgz *)
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
tune trO3 /tmp/old $V /tmp/hist --transfer
caches=""; for n in plainN1 plainO1 plainN2 plainO2 trN1 trO1 trN2 trO2 trN3 trO3; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
timeout 45 python3 results/h100/twentyeighth/compare_caches.py $V $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -11 $R/compare.log
timeout 40 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml \
  results/h100/resnet50_n32/results.json /tmp/t_rn50/c.sqlite3 $R/compare_rn50.json > $R/compare_rn50.log 2>&1
echo "compare rn50 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_rn50.log
cd /tmp && tar czf $OUT/r.tgz r
