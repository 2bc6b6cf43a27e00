# Thirty-fourth session, call 4 (nvidia-h200: one H200, 16 cores): call 3 again after `direct` left
# the model's GPU-fill features (WORK_TILES; new: the working tree; old: 71ce9d4). ResNet-50 plain from
# empty (the history), Tnew Told with --transfer from empty; VGG-16 (batch 8) with the plain run as
# history: Vnew Vold Vnew, then VGG-16 plain from empty; then each network's winners side by side.
#   bash results/h100/thirtyfourth/call4.sh   (device tool: carry [".probe/s34"])
set -u
[ -d .whl ] || ln -s .probe/s34/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
HERE=$PWD; OLD=$PWD/.probe/s34/old
tune() {  # name tree config history(or -) [args]
  local name=$1 tree=$2 config=$3 history=$4; shift 4
  [ $(( $(date +%s) - T0 )) -gt 430 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  [ "$history" != - ] && cp /tmp/t_$history/s.journal /tmp/t_$history/c.sqlite3 $t/
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 90 python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1)
  echo "tune $name rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep -o "tuning took.*candidates" $R/tune_$name.log | tr -s ' ' | head -1
  local results_dir; results_dir=$(cd $tree && python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" $config)
  cp $results_dir/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz
}
RN=examples/resnet50.yaml; VGG=examples/vgg16.yaml
tune plain $HERE $RN -; tune Tnew_c $HERE $RN - --transfer; tune Told_c $OLD $RN - --transfer
tune Vnew_c $HERE $VGG plain --transfer; tune Vold_c $OLD $VGG plain --transfer; tune Vnew_d $HERE $VGG plain --transfer
tune Vplain $HERE $VGG -
compare() {  # out config names...
  local out=$1 config=$2; shift 2; local caches=""
  for n in "$@"; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
  local left=$(( 585 - ($(date +%s) - T0) ))
  [ $left -gt 20 ] && timeout $left python3 results/h100/twentyeighth/compare_caches.py $config $R/$out.json $caches > $R/$out.log 2>&1
  echo "$out rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/$out.log
}
compare compare_vgg $VGG Vplain Vnew_c Vold_c Vnew_d
compare compare_rn50 $RN plain Tnew_c Told_c
cd /tmp && tar czf $OUT/r.tgz r
