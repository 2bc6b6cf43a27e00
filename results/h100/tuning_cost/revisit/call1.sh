# Prepared in the twentieth session for the next device session (not yet run): issue 16's first
# target at HEAD, with Tuner._revisit (8789959). On one H100: ResNet-50 fp32 from empty storage,
# winners' and compute caches, three times; each run's winners re-timed beside the committed
# 4x-budget run (results/h100/resnet50_n32), and its journal kept for what _revisit did.
#   bash results/h100/tuning_cost/revisit/call1.sh      (device tool: carry [".whl"], ~6 min)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=/tmp/r; rm -rf $R; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; git log -1 --format=%H 2>/dev/null; } > $R/env.txt 2>&1
for n in 1 2 3; do
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "skip run$n" | tee -a $R/times.txt; continue; }
  rm -rf /tmp/t_$n; mkdir -p /tmp/t_$n; s=$(date +%s.%N)
  CUPY_CACHE_DIR=/tmp/t_$n/cupy CUDA_CACHE_PATH=/tmp/t_$n/cc timeout 120 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/t_$n/s.journal --cache /tmp/t_$n/c.sqlite3 > $R/tune_$n.log 2>&1
  echo "tune run$n rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$n.log | cut -c1-200
  grep -c "neighbours tuned after" $R/tune_$n.log | sed "s/^/revisits run$n: /" | tee -a $R/times.txt
  cp results/resnet50/tune.json $R/tune_$n.json; gzip -c /tmp/t_$n/s.journal > $R/journal_$n.gz
  timeout 60 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/t_$n/c.sqlite3 $R/compare_$n.json > $R/compare_$n.log 2>&1
  echo "compare run$n rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_$n.log
done
cd /tmp && tar czf $OUT/r.tgz r
