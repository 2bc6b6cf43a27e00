# device call 5 (twentieth session), asked for an H100: ResNet-50 fp32 from empty storage and caches
# with the sampler's warm-up (new, c0155c0) and without (old, 4e6d4d3, .probe/old20b), order new old
# new; the first new run's winners re-timed beside the committed 4x-budget run.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=/tmp/r; rm -rf $R; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $R/env.txt 2>&1
tune() {  # name code-root
  [ $(( $(date +%s) - T0 )) -gt 200 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  (cd $2 && CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc PYTHONPATH=/tmp/site:$PWD timeout 90 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1.log | cut -c1-200
  cp $2/results/resnet50/tune.json $R/tune_$1.json; gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune new1 .
tune old1 .probe/old20b
tune new2 .
left=$(( 265 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/t_new1/c.sqlite3 $R/compare_new1.json > $R/compare_new1.log 2>&1
echo "compare new1 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_new1.log
cd /tmp && tar czf $OUT/r.tgz r
