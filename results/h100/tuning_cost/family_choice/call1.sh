# Twenty-first session, one H100: ResNet-50 fp32 from empty storage, winners' and compute caches,
# with the family of each proposal drawn from the study's results (new: c9f6b2f, since reverted) and
# with TPE choosing it (old: c4fd13f, unpacked into .probe/old21), in the order new old old new;
# each run's winners re-timed beside the committed 4x-budget run (results/h100/resnet50_n32).
#   bash results/h100/tuning_cost/family_choice/call1.sh   (device tool: carry [".whl", ".probe/old21"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
ROOT=$PWD; R=/tmp/r; rm -rf $R; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; git log -1 --format=%H 2>/dev/null; git status --short; } > $R/env.txt 2>&1
run() {  # run TAG N
  local dir=$ROOT; [ $1 = old ] && dir=$ROOT/.probe/old21
  [ $(( $(date +%s) - T0 )) -gt 440 ] && { echo "skip $1$2" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$1$2; rm -rf $t; mkdir -p $t; local s=$(date +%s.%N)
  (cd $dir && PYTHONPATH=/tmp/site:$dir CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 130 python3 -m autoconv tune examples/resnet50.yaml --storage $t/s.journal --cache $t/c.sqlite3 > $R/tune_$1$2.log 2>&1)
  echo "tune $1$2 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1$2.log | cut -c1-200
  cp $dir/results/resnet50/tune.json $R/tune_$1$2.json; gzip -c $t/s.journal > $R/journal_$1$2.gz
  (cd $ROOT && PYTHONPATH=/tmp/site:$ROOT timeout 50 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json $t/c.sqlite3 $R/compare_$1$2.json > $R/compare_$1$2.log 2>&1)
  echo "compare $1$2 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_$1$2.log
}
run new 1; run old 1; run old 2; run new 2
cd /tmp && tar czf $OUT/r.tgz r
