# Thirty-fourth session, call 2 (nvidia-h200: one H200, 16 cores): `--transfer` from empty storage and
# caches with the polish that varies each parameter (new: the working tree) against the six variations
# predicted fastest (old: 71ce9d4, in .probe/s34/old); order plain Tnew Told Told Tnew plain2; then every
# run's winners re-timed side by side in one process (../twentyeighth/compare_caches.py).
#   bash results/h100/thirtyfourth/call2.sh   (device tool: carry [".probe/s34"])
set -u
[ -d .whl ] || ln -s .probe/s34/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
HERE=$PWD; OLD=$PWD/.probe/s34/old
tune() {  # name tree [args]
  local name=$1 tree=$2; shift 2
  [ $(( $(date +%s) - T0 )) -gt 400 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 90 python3 -m autoconv tune examples/resnet50.yaml --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1)
  echo "tune $name rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep -o "tuning took.*candidates" $R/tune_$name.log | tr -s ' ' | head -1
  cp $tree/results/resnet50/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz
}
tune plain $HERE; tune Tnew_a $HERE --transfer; tune Told_a $OLD --transfer; tune Told_b $OLD --transfer
tune Tnew_b $HERE --transfer; tune plain2 $HERE
caches=""; for n in plain Tnew_a Told_a Told_b Tnew_b plain2; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
left=$(( 580 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left python3 results/h100/twentyeighth/compare_caches.py examples/resnet50.yaml $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -8 $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
