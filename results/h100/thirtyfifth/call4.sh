# Thirty-fifth session, call 4, nvidia-h200 (one H200, 16 cores): shapes the history has not seen.
# ResNet-50 b32 FP32 tuned from empty with `--transfer` (the history, H), then Inception-v3's ten
# layers (examples/inception_v3_layers.yaml: 1x7, 7x1, 1x3 and 5x5 filters, asymmetric padding, 149x149
# and 8x8 images) with H's storage and cache: with `--transfer` (T) and without (P, the full study),
# order T P P T, the working tree (12f7342); then each Inception run's winners re-timed side by side
# in one process (../twentyeighth/compare_caches.py), relative to the first P run.
#   bash results/h100/thirtyfifth/call4.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
tune() {  # name config history(or -) [args]
  local name=$1 config=$2 history=$3; shift 3
  [ $(( $(date +%s) - T0 )) -gt 240 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  [ "$history" != - ] && cp /tmp/t_$history/s.journal /tmp/t_$history/c.sqlite3 $t/
  local start=$(date +%s.%N)
  CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 100 python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  local rc=$? end=$(date +%s.%N)
  echo "tune $name rc=$rc wall=$(python3 -c "print(round($end-$start,2))") at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep -o "tuning took.*candidates" $R/tune_$name.log | tr -s ' ' | head -1
  local results_dir; results_dir=$(python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" $config)
  cp $results_dir/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz
}
IN=examples/inception_v3_layers.yaml
tune H examples/resnet50.yaml - --transfer
tune T_a $IN H --transfer; tune P_a $IN H; tune P_b $IN H; tune T_b $IN H --transfer
caches=""; for n in P_a T_a P_b T_b; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
left=$(( 320 - ($(date +%s) - T0) ))
[ $left -gt 20 ] && timeout $left python3 results/h100/twentyeighth/compare_caches.py $IN $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
