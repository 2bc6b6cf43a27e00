# device call (eighth session, #16): ResNet-50 fp32 from empty, --workers-per-gpu 1, then 2, then 3 (9fbdbbd), each with empty storage, cache and compute cache; outputs in one tarball
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/e
run() {  # name extra-args
  rm -rf /tmp/r_$1; mkdir -p /tmp/r_$1
  s=$(date +%s); CUDA_CACHE_PATH=/tmp/r_$1/cc timeout 200 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/r_$1/studies.journal --cache /tmp/r_$1/cache.sqlite3 $2 > /tmp/e/tune_$1.log 2>&1; echo "$1 rc=$? wall=$(( $(date +%s) - s ))" | tee -a /tmp/e/times.txt
  cp results/resnet50/tune.json /tmp/e/tune_$1.json; cp /tmp/r_$1/cache.sqlite3 /tmp/e/cache_$1.sqlite3
  grep "tuning took" /tmp/e/tune_$1.log
}
run w1 ""
run w2 "--workers-per-gpu 2"
run w3 "--workers-per-gpu 3"
cd /tmp && tar czf $OUT/e.tgz e
