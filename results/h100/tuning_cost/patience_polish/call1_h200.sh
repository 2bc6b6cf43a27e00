# device call 1 (ninth session): warm-up, ResNet-50 fp32 from empty (HEAD 27dbdc0, 3 workers) with its journal kept,
# VGG-16 from empty without and with the ResNet-50 history (journals kept), winners vs committed, then the GPU tests.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/f
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; git log -1 --format=%H 2>/dev/null; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/f/env.txt 2>&1
CUDA_CACHE_PATH=/tmp/warmcc timeout 60 python3 -m autoconv tune results/h100/tuning_cost/warm.yaml --storage /tmp/warm.journal --cache /tmp/warm.sqlite3 > /tmp/f/warm.log 2>&1; echo "warm rc=$? $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
run() {  # name config history-cache extra
  rm -rf /tmp/r_$1; mkdir -p /tmp/r_$1
  [ -n "$3" ] && cp $3 /tmp/r_$1/cache.sqlite3
  s=$(date +%s); CUDA_CACHE_PATH=/tmp/r_$1/cc timeout 200 python3 -m autoconv tune $2 --storage /tmp/r_$1/studies.journal --cache /tmp/r_$1/cache.sqlite3 $4 > /tmp/f/tune_$1.log 2>&1; echo "$1 rc=$? wall=$(( $(date +%s) - s ))" | tee -a /tmp/f/times.txt
  cp results/*/tune.json /tmp/f/ 2>/dev/null; for d in results/resnet50 results/vgg16; do [ -f $d/tune.json ] && mv $d/tune.json /tmp/f/tune_$1_$(basename $d).json; done
  cp /tmp/r_$1/cache.sqlite3 /tmp/f/cache_$1.sqlite3; cp /tmp/r_$1/studies.journal /tmp/f/journal_$1
  grep "tuning took" /tmp/f/tune_$1.log
}
run rn50 examples/resnet50.yaml "" ""
run vgg_plain examples/vgg16.yaml "" ""
run vgg_hist examples/vgg16.yaml /tmp/r_rn50/cache.sqlite3 ""
timeout 100 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/r_rn50/cache.sqlite3 /tmp/f/compare_rn50.json > /tmp/f/compare_rn50.log 2>&1; echo "compare rc=$?"; tail -2 /tmp/f/compare_rn50.log
left=$(( 560 - ($(date +%s) - T0) )); echo "gpu tests with ${left}s" | tee -a /tmp/f/times.txt
timeout $left python3 -m pytest -m gpu -q -p no:cacheprovider -rfE > /tmp/f/gpu_tests.log 2>&1; echo "tests rc=$?"; tail -5 /tmp/f/gpu_tests.log
cd /tmp && tar czf $OUT/f.tgz f
