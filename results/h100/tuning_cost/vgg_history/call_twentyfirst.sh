# Twenty-first session, one H100, HEAD's search (6ef02db = c4fd13f's): issue 16's target 2 measured
# again. ResNet-50 fp32 tuned from empty (its winners' cache and journal are the history), then
# VGG-16 (examples/vgg16.yaml) with that history and without, order hist1 plain1 plain2 hist2.
# Every tune from empty compute and CuPy caches.
#   bash results/h100/tuning_cost/vgg_history/call_twentyfirst.sh   (device tool: carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=/tmp/r; rm -rf $R; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy;print(cupy.__version__)"; } > $R/env.txt 2>&1
tune() {  # name config results-folder history-dir
  left=$(( 480 - ($(date +%s) - T0) )); [ $left -lt 50 ] && { echo "tune $1 skipped ($left s left)" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  [ -n "$4" ] && cp $4/c.sqlite3 $4/s.journal /tmp/t_$1/
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout $(( left < 130 ? left : 130 )) python3 -m autoconv tune $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1.log | cut -c1-220
  cp $3/tune.json $R/tune_$1.json
}
tune rn50 examples/resnet50.yaml results/resnet50 ""
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal /tmp/hist/
tune vgg_hist1 examples/vgg16.yaml results/vgg16 /tmp/hist
tune vgg_plain1 examples/vgg16.yaml results/vgg16 ""
tune vgg_plain2 examples/vgg16.yaml results/vgg16 ""
tune vgg_hist2 examples/vgg16.yaml results/vgg16 /tmp/hist
cd /tmp && tar czf $OUT/r.tgz r
