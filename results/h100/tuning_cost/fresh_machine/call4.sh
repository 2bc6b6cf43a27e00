# device call 4 (fifteenth session, code 49224c6): on a machine started for the call, ResNet-50 fp32 from
# empty (storage, winners' cache, compute cache, CuPy kernel cache) first, its winners re-timed beside the
# committed 4x-budget run's; then VGG-16 (batch 8) with that run's winners as history and without,
# order hist plain plain hist, every run with empty caches of its own (issue 16's first two targets).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/r; mkdir -p $R
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"
  echo "~/.cupy/kernel_cache files: $(find ~/.cupy/kernel_cache -type f 2>/dev/null | wc -l)"; } > $R/env.txt 2>&1
tune() {  # name config results-folder history-cache
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s)
  [ -n "$4" ] && cp $4 /tmp/t_$1/c.sqlite3
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 200 python3 -m autoconv tune $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? wall=$(( $(date +%s) - s ))s at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $3/tune.json $R/tune_$1.json
}
tune rn50 examples/resnet50.yaml results/resnet50 ""
cp /tmp/t_rn50/c.sqlite3 /tmp/rn50_winners.sqlite3
timeout 120 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/rn50_winners.sqlite3 $R/compare_rn50.json > $R/compare_rn50.log 2>&1; echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -2 $R/compare_rn50.log
tune vgg_hist1 examples/vgg16.yaml results/vgg16 /tmp/rn50_winners.sqlite3
tune vgg_plain1 examples/vgg16.yaml results/vgg16 ""
tune vgg_plain2 examples/vgg16.yaml results/vgg16 ""
tune vgg_hist2 examples/vgg16.yaml results/vgg16 /tmp/rn50_winners.sqlite3
cd $OUT && tar czf r.tgz r && rm -rf r
