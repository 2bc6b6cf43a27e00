# device call (eighth session, #16): ResNet-50 fp32 from empty, --workers-per-gpu 4 then 3 (9fbdbbd), each with empty storage, cache and compute cache; then both caches' winners beside the committed run's
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/f
nvidia-smi --query-gpu=name,driver_version --format=csv > /tmp/f/env.txt; nproc >> /tmp/f/env.txt
run() {  # name extra-args
  rm -rf /tmp/r_$1; mkdir -p /tmp/r_$1
  s=$(date +%s); CUDA_CACHE_PATH=/tmp/r_$1/cc timeout 200 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/r_$1/studies.journal --cache /tmp/r_$1/cache.sqlite3 $2 > /tmp/f/tune_$1.log 2>&1; echo "$1 rc=$? wall=$(( $(date +%s) - s ))" | tee -a /tmp/f/times.txt
  cp results/resnet50/tune.json /tmp/f/tune_$1.json; cp /tmp/r_$1/cache.sqlite3 /tmp/f/cache_$1.sqlite3
  grep "tuning took" /tmp/f/tune_$1.log
}
run w4 "--workers-per-gpu 4"
run w3 "--workers-per-gpu 3"
for n in w4 w3; do timeout 100 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/r_$n/cache.sqlite3 /tmp/f/compare_$n.json > /tmp/f/compare_$n.log 2>&1; echo "compare $n rc=$?"; tail -1 /tmp/f/compare_$n.log; done
cd /tmp && tar czf $OUT/f.tgz f
