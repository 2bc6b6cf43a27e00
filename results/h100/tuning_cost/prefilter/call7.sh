# device call 7 (sixteenth session, code 9cffdfe): the prefilter A/B in the other order, every run from empty caches:
# ResNet-50 off then on (--prefilter); VGG-16 hist_no plain_no plain_pf hist_pf with the "on" run's history.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/r; mkdir -p $R
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
tune() {  # name config results-folder history-dir extra-args
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  [ -n "$4" ] && cp $4/c.sqlite3 $4/s.journal /tmp/t_$1/
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 200 python3 -m autoconv tune $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 $5 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $3/tune.json $R/tune_$1.json
}
tune rn50_no examples/resnet50.yaml results/resnet50 "" ""
tune rn50_pf examples/resnet50.yaml results/resnet50 "" "--prefilter"
mkdir -p /tmp/hist && cp /tmp/t_rn50_pf/c.sqlite3 /tmp/t_rn50_pf/s.journal /tmp/hist/
tune vgg_hist_no examples/vgg16.yaml results/vgg16 /tmp/hist ""
tune vgg_plain_no examples/vgg16.yaml results/vgg16 "" ""
tune vgg_plain_pf examples/vgg16.yaml results/vgg16 "" "--prefilter"
tune vgg_hist_pf examples/vgg16.yaml results/vgg16 /tmp/hist "--prefilter"
timeout 150 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/t_rn50_pf/c.sqlite3 $R/compare_rn50_pf.json > $R/compare_rn50_pf.log 2>&1; echo "compare pf rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_rn50_pf.log
cd $OUT && tar czf r.tgz r && rm -rf r
