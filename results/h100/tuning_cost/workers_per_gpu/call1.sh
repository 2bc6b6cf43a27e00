# device call (eighth session, #16): ResNet-50 fp32 from empty, --workers-per-gpu 2 then 1 (9fbdbbd), each with empty storage, cache and compute cache; then 2's winners beside the committed run's; then the GPU worker tests
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/d
run() {  # name extra-args
  rm -rf /tmp/r_$1; mkdir -p /tmp/r_$1
  s=$(date +%s); CUDA_CACHE_PATH=/tmp/r_$1/cc timeout 250 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/r_$1/studies.journal --cache /tmp/r_$1/cache.sqlite3 $2 > $OUT/d/tune_$1.log 2>&1; echo "$1 rc=$? wall=$(( $(date +%s) - s ))" | tee -a $OUT/d/times.txt
  cp results/resnet50/tune.json $OUT/d/tune_$1.json; cp /tmp/r_$1/cache.sqlite3 $OUT/d/cache_$1.sqlite3
  grep "tuning took" $OUT/d/tune_$1.log
}
run w2 "--workers-per-gpu 2"
run w1 ""
timeout 100 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/r_w2/cache.sqlite3 $OUT/d/compare_w2.json > $OUT/d/compare_w2.log 2>&1; echo "compare rc=$?"
tail -1 $OUT/d/compare_w2.log
timeout 120 python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/gpu/test_gpu.py > $OUT/d/gpu.log 2>&1; echo "gpu tests rc=$?"; tail -2 $OUT/d/gpu.log
