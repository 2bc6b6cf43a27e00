# device call (eighth session, #16): ResNet-50 fp32 from empty at 87bece2 (screening timing, patience counts in-flight) then at 9278711 (before), each with empty storage, cache and compute cache; then the new winners beside the committed run's
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
ROOT=$PWD
mkdir -p /tmp/old && tar xf old9278711.tar (git archive 9278711) -C /tmp/old
mkdir -p $OUT/c
run() {  # name tree
  rm -rf /tmp/r_$1; mkdir -p /tmp/r_$1
  (cd $2 && export PYTHONPATH=/tmp/site:$2 CUDA_CACHE_PATH=/tmp/r_$1/cc && s=$(date +%s) && timeout 290 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/r_$1/studies.journal --cache /tmp/r_$1/cache.sqlite3 > $OUT/c/tune_$1.log 2>&1; echo "$1 rc=$? wall=$(( $(date +%s) - s ))" | tee -a $OUT/c/times.txt; cp results/resnet50/tune.json $OUT/c/tune_$1.json; cp /tmp/r_$1/cache.sqlite3 $OUT/c/cache_$1.sqlite3)
  tail -2 $OUT/c/tune_$1.log
}
run new $ROOT
run old /tmp/old
export PYTHONPATH=/tmp/site:$ROOT
timeout 100 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/r_new/cache.sqlite3 $OUT/c/compare_new.json > $OUT/c/compare_new.log 2>&1; echo "compare rc=$?"
tail -3 $OUT/c/compare_new.log
