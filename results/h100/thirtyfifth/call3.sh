# Thirty-fifth session, call 3, nvidia-h200 (one H200, 16 cores): ResNet-50 b32 FP32 from empty
# storage, cache, CuPy and CUDA compute caches, with `--transfer` (T: later studies transfer from the
# run's first ones once the history's model has 8 problems) and without (P: the default, full
# studies), order T P P T, the working tree (12f7342); then every run's winners re-timed side by
# side in one process (../twentyeighth/compare_caches.py), relative to the first P run.
#   bash results/h100/thirtyfifth/call3.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
CONFIG=examples/resnet50.yaml
tune() {  # name [args]
  local name=$1; shift
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  local start=$(date +%s.%N)
  CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 110 python3 -m autoconv tune $CONFIG --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  local rc=$? end=$(date +%s.%N)
  echo "tune $name rc=$rc wall=$(python3 -c "print(round($end-$start,2))") at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep -o "tuning took.*candidates" $R/tune_$name.log | tr -s ' ' | head -1
  cp results/resnet50/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz
}
tune T_a --transfer; tune P_a; tune P_b; tune T_b --transfer
caches=""; for n in P_a T_a P_b T_b; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
left=$(( 585 - ($(date +%s) - T0) ))
[ $left -gt 20 ] && timeout $left python3 results/h100/twentyeighth/compare_caches.py $CONFIG $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
