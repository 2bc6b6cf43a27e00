# Twenty-first session, one H100, the last ~5 device minutes: ResNet-50 fp32 from empty storage,
# winners' and compute caches with the early polish (new: acef6b2, the working tree) and without
# (old: c4fd13f, unpacked into .probe/old21), order new old new; the new runs' winners re-timed
# beside the committed 4x-budget run (results/h100/resnet50_n32). Files go to $OUT as they come.
#   bash results/h100/tuning_cost/early_polish/call1.sh   (device tool: carry [".whl", ".probe/old21"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
ROOT=$PWD; R=$OUT; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $R/env.txt 2>&1
run() {  # run TAG N [compare]
  local dir=$ROOT; [ $1 = old ] && dir=$ROOT/.probe/old21
  [ $(( $(date +%s) - T0 )) -gt 190 ] && { echo "skip $1$2" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$1$2; rm -rf $t; mkdir -p $t; local s=$(date +%s.%N)
  (cd $dir && PYTHONPATH=/tmp/site:$dir CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 110 python3 -m autoconv tune examples/resnet50.yaml --storage $t/s.journal --cache $t/c.sqlite3 > $R/tune_$1$2.log 2>&1)
  echo "tune $1$2 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1$2.log | cut -c1-200
  cp $dir/results/resnet50/tune.json $R/tune_$1$2.json; gzip -c $t/s.journal > $R/journal_$1$2.gz
  [ -z "${3:-}" ] && return
  [ $(( $(date +%s) - T0 )) -gt 275 ] && { echo "skip compare $1$2" | tee -a $R/times.txt; return; }
  (cd $ROOT && PYTHONPATH=/tmp/site:$ROOT timeout 30 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json $t/c.sqlite3 $R/compare_$1$2.json > $R/compare_$1$2.log 2>&1)
  echo "compare $1$2 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_$1$2.log
}
run new 1 compare; run old 1; run new 2 compare
