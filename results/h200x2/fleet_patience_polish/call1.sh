# device call (tenth session, two GPUs of one host): ResNet-50 fp32 tuned from empty storage, cache and
# compute cache on one GPU and on two, alternating (1, 2, 2, 1); then each run's winners re-timed
# in one process beside the committed 4x-budget run's (GPU 0).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/p
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/p/env.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
CUDA_CACHE_PATH=/tmp/warmcc timeout 60 python3 -m autoconv tune results/h100/tuning_cost/warm.yaml --storage /tmp/warm.journal --cache /tmp/warm.sqlite3 --gpus all > /tmp/p/warm.log 2>&1; echo "warm rc=$? $(( $(date +%s) - T0 ))s" | tee -a /tmp/p/times.txt
run() {  # name gpus
  rm -rf /tmp/r_$1; mkdir -p /tmp/r_$1
  s=$(date +%s); CUDA_CACHE_PATH=/tmp/r_$1/cc timeout 150 python3 -m autoconv tune examples/resnet50.yaml --gpus $2 --storage /tmp/r_$1/studies.journal --cache /tmp/r_$1/cache.sqlite3 > /tmp/p/tune_$1.log 2>&1; echo "$1 gpus=$2 rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/p/times.txt
  mv results/resnet50/tune.json /tmp/p/tune_$1.json; cp /tmp/r_$1/cache.sqlite3 /tmp/p/cache_$1.sqlite3
  grep "tuning took" /tmp/p/tune_$1.log
}
run one_a 0
run two_a all
run two_b all
run one_b 0
for n in one_a two_a; do [ $(( $(date +%s) - T0 )) -gt 500 ] && break; timeout 60 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/r_$n/cache.sqlite3 /tmp/p/compare_$n.json > /tmp/p/compare_$n.log 2>&1; echo "compare $n rc=$?"; tail -1 /tmp/p/compare_$n.log; done
cd /tmp && tar czf $OUT/p.tgz p
