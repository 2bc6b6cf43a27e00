# Prepared in the thirty-fifth session, NOT RUN (no device time was left), nvidia-h200 (one H200, 16 cores): the
# transfer's polish with each parameter's fastest-predicted variation (pp: 12f7342 with
# ../thirtyfourth/per_parameter_polish.diff, carried in .probe/s35/pp) against without (head: the
# working tree, 12f7342), where call 4's transfer runs lost Inception-v3's Conv2d_4a_3x3 (1.13x).
# ResNet-50 b32 FP32 from empty with `--transfer` (history H, head), then Inception-v3's ten layers
# with H's storage and cache, `--transfer`, pp then head (one run each); their winners re-timed side
# by side (../twentyeighth/compare_caches.py). Results copied to $OUT as they come.
#   bash results/h100/thirtyfifth/next_call.sh   (device tool: carry [".probe/s35/whl", ".probe/s35/pp"])
# The pp tree: mkdir -p .probe/s35/pp && git archive 12f7342 autoconv examples pyproject.toml search_spaces
#   templates | tar -x -C .probe/s35/pp && (cd .probe/s35/pp && patch -p1 -s < ../../../results/h100/
#   thirtyfourth/per_parameter_polish.diff)   (its tests' hunk finds no tests/ there and is skipped)
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=$OUT/r; device_preamble $R
HERE=$PWD
tune() {  # name tree config history(or -) [args]
  local name=$1 tree=$2 config=$3 history=$4; shift 4
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  [ "$history" != - ] && cp /tmp/t_$history/s.journal /tmp/t_$history/c.sqlite3 $t/
  local start=$(date +%s.%N)
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 60 python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1)
  local rc=$? end=$(date +%s.%N)
  echo "tune $name rc=$rc wall=$(python3 -c "print(round($end-$start,2))") at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep -o "tuning took.*candidates" $R/tune_$name.log | tr -s ' ' | head -1
  local results_dir; results_dir=$(cd $tree && python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" $config)
  cp $results_dir/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz
}
IN=examples/inception_v3_layers.yaml
tune H $HERE examples/resnet50.yaml - --transfer
tune T_pp $HERE/.probe/s35/pp $IN H --transfer
tune T_head $HERE $IN H --transfer
timeout 30 python3 results/h100/twentyeighth/compare_caches.py $IN $R/compare.json T_head=/tmp/t_T_head/c.sqlite3 T_pp=/tmp/t_T_pp/c.sqlite3 > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep -E "Conv2d_4a|geomean" $R/compare.log
