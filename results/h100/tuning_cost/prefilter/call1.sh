# device call 1 (sixteenth session, code HEAD 8317039): the whole GPU suite; then ResNet-50 fp32 from empty and
# VGG-16 plain / with the ResNet-50 history (cache + storage), each run with empty caches; journals kept for the
# CPU replay of a pre-compile filter (issue 16).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/r; mkdir -p $R
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; git log -1 --format=%H 2>/dev/null; } > $R/env.txt 2>&1
timeout 420 python3 -m pytest -m gpu -q -p no:cacheprovider tests > $R/gpu_suite.log 2>&1 || true
echo "suite at $(( $(date +%s) - T0 ))s: $(tail -1 $R/gpu_suite.log)" | tee -a $R/times.txt
tune() {  # name config results-folder history-dir
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  [ -n "$4" ] && cp $4/c.sqlite3 $4/s.journal /tmp/t_$1/
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 200 python3 -m autoconv tune $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $3/tune.json $R/tune_$1.json; gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune rn50 examples/resnet50.yaml results/resnet50 ""
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal /tmp/hist/
tune vgg_plain examples/vgg16.yaml results/vgg16 ""
tune vgg_hist examples/vgg16.yaml results/vgg16 /tmp/hist
cd $OUT && tar czf r.tgz r && rm -rf r
