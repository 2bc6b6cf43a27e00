# Thirty-second session, call 2, one GPU: issue 16 target 2 with the tuner's own work cut
# (enumeration at once over arrays, keys and tables a column at a time, no enumeration pool):
# "new" = the working tree, "old" = 9fc8da1 (carried as an archive), VGG-16 at batch 8 with the
# thirty-first session's ResNet-50 history and --transfer ("tr"), and without history ("plain").
# From empty CuPy and CUDA caches; alternated new/old and swapped each round; then the winners
# re-timed side by side.
#   bash results/h100/thirtysecond/call2.sh   (device tool: carry [".whl", ".probe/c32"], the folder holding
#   old.tgz = git archive 9fc8da1 autoconv templates search_spaces examples pyproject.toml | gzip, and
#   history31.tgz = ../thirtyfirst/history_rn50.tgz)
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
TRACE=$ROOT/results/h100/thirtieth/trace
mkdir -p /tmp/hist /tmp/old && tar xzf .probe/c32/history31.tgz -C /tmp/hist && tar xzf .probe/c32/old.tgz -C /tmp/old
HISTORY_BYTES=$(stat -c %s /tmp/hist/s.journal)
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
  [ -n "$hist" ] && tail -c +$(( HISTORY_BYTES + 1 )) $t/s.journal | gzip > $R/journal_tail_$name.gz
  gzip -f $R/tune_$name.log
}
V=examples/vgg16.yaml
tune tr1 $ROOT $V /tmp/hist --transfer
tune trO1 /tmp/old $V /tmp/hist --transfer
tune plain1 $ROOT $V ""
tune plainO1 /tmp/old $V ""
tune trO2 /tmp/old $V /tmp/hist --transfer
tune tr2 $ROOT $V /tmp/hist --transfer
tune plainO2 /tmp/old $V ""
tune plain2 $ROOT $V ""
tune tr3 $ROOT $V /tmp/hist --transfer
tune trO3 /tmp/old $V /tmp/hist --transfer
tune plain3 $ROOT $V ""
tune plainO3 /tmp/old $V ""
tune trO4 /tmp/old $V /tmp/hist --transfer
tune tr4 $ROOT $V /tmp/hist --transfer
caches=""; for n in plain1 plain2 plain3 plainO1 plainO2 plainO3 tr1 tr2 tr3 tr4 trO1 trO2 trO3 trO4; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
timeout 60 python3 results/h100/twentyeighth/compare_caches.py $V $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -15 $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
