# Twenty-fourth session, call 4 (nvidia-h100-x1): how much of tf32's geometric mean the search leaves.
# tf32 NHWC ResNet-50 at batch 32 tuned from empty storage and cache twice, each then benchmarked:
#   p120: the config's budget with patience 120 (its own: 60);
#   all:  every valid configuration of every layer (trials and patience past the largest space).
#   bash results/h100/tf32_search_headroom/call4.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
run() {   # name, timeout, extra tune options
  local R=$1 LIMIT=$2; shift 2
  export AUTOCONV_CACHE=/tmp/t_$R/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t_$R/cc
  rm -rf /tmp/t_$R; mkdir -p /tmp/t_$R /tmp/o/$R
  timeout $LIMIT python3 -m autoconv tune examples/resnet50_tf32_nhwc.yaml --storage /tmp/t_$R/studies.journal "$@" > /tmp/o/$R/tune.log 2>&1
  echo "$R tune rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep "tuning took" /tmp/o/$R/tune.log | cut -c1-200
  cp results/resnet50_tf32_nhwc/tune.json /tmp/o/$R/ 2>/dev/null
  timeout 130 python3 -m autoconv bench examples/resnet50_tf32_nhwc.yaml --no-tune --out /tmp/o/$R/results.json > /tmp/o/$R/bench.log 2>&1
  echo "$R bench rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep -i "geomean" /tmp/o/$R/bench.log | tail -1
  gzip /tmp/o/$R/tune.log
}
run p120 150 --patience 120
run all 270 --trials 1000 --seconds 600 --patience 1000
tar czf $OUT/call4.tgz -C /tmp/o .
