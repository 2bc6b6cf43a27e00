# Prepared in the twenty-first session for the next device session (not run): issue 16, a shorter
# patience with the early polish. One H100; ResNet-50 fp32 from empty storages and caches:
#   new = HEAD with early_polish.patch applied, run with --patience 25;
#   old = HEAD as it is (patience 40, the config's);
# order new old new old, each run's winners re-timed beside the committed 4x-budget run.
# Prepare here, then carry both:
#   rm -rf .probe/ep25 && mkdir -p .probe/ep25 && git archive HEAD autoconv templates search_spaces examples tests \
#     pyproject.toml | tar -x -C .probe/ep25 && git apply --directory=.probe/ep25 \
#     results/h100/tuning_cost/patience_replay/early_polish.patch
#   bash results/h100/tuning_cost/patience_replay/call_next.sh   (carry [".whl", ".probe/ep25"], ~7 min)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
ROOT=$PWD; R=$OUT; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; git log -1 --format=%H; } > $R/env.txt 2>&1
run() {  # run TAG N
  local dir=$ROOT extra=""; [ $1 = new ] && { dir=$ROOT/.probe/ep25; extra="--patience 25"; }
  [ $(( $(date +%s) - T0 )) -gt 470 ] && { echo "skip $1$2" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$1$2; rm -rf $t; mkdir -p $t; local s=$(date +%s.%N)
  (cd $dir && PYTHONPATH=/tmp/site:$dir CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 120 python3 -m autoconv tune examples/resnet50.yaml $extra --storage $t/s.journal --cache $t/c.sqlite3 > $t/tune.log 2>&1)
  echo "tune $1$2 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $t/tune.log | cut -c1-200
  gzip -c $t/s.journal > $t/journal.gz; cp $dir/results/resnet50/tune.json $t/tune.json
  (cd $ROOT && PYTHONPATH=/tmp/site:$ROOT timeout 60 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json $t/c.sqlite3 $t/compare.json > $t/compare.log 2>&1)
  echo "compare $1$2 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $t/compare.log
  tar czf $R/run_$1$2.tgz -C $t tune.log tune.json journal.gz compare.json compare.log   # (few files: $OUT's count is limited)
}
run new 1; run old 1; run new 2; run old 2
