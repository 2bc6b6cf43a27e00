# device call (tenth session, two GPUs, continued on the same host): workers per GPU on two GPUs
# (the default gives 3 each on 32 cores, against 4 for one GPU), alternating with one GPU.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/q
T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD
run() {  # name gpus workers-per-gpu
  rm -rf /tmp/r_$1; mkdir -p /tmp/r_$1
  s=$(date +%s); CUDA_CACHE_PATH=/tmp/r_$1/cc timeout 120 python3 -m autoconv tune examples/resnet50.yaml --gpus $2 --workers-per-gpu $3 --storage /tmp/r_$1/studies.journal --cache /tmp/r_$1/cache.sqlite3 > /tmp/q/tune_$1.log 2>&1; echo "$1 gpus=$2 workers/gpu=$3 rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/q/times.txt
  mv results/resnet50/tune.json /tmp/q/tune_$1.json; cp /tmp/r_$1/cache.sqlite3 /tmp/q/cache_$1.sqlite3
  grep "tuning took" /tmp/q/tune_$1.log
}
run two_w5 all 5
run one_c 0 4
run two_w4 all 4
run two_w5b all 5
cd /tmp && tar czf $OUT/q.tgz q
