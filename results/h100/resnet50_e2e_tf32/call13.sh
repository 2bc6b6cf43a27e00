# device call (thirteenth session): the whole GPU suite; then ResNet-50 tf32 NHWC tuned from empty
# and benchmarked, and the tf32 channels_last forward with that cache (eager calls of cuDNN's layers
# now run PyTorch's own convolution).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider > /tmp/r/gpu_suite.log 2>&1
echo "gpu suite rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep -E "passed|failed" /tmp/r/gpu_suite.log | tail -3
export AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc; rm -rf /tmp/t; mkdir -p /tmp/t
s=$(date +%s); timeout 100 python3 -m autoconv tune examples/resnet50_tf32_nhwc.yaml --storage /tmp/t/studies.journal > /tmp/r/tune.log 2>&1
echo "tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/tune.log
s=$(date +%s); timeout 110 python3 -m autoconv bench examples/resnet50_tf32_nhwc.yaml --no-tune --out /tmp/r/results.json > /tmp/r/bench.log 2>&1
echo "bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/bench.log
s=$(date +%s); timeout $(( 585 - ($(date +%s) - T0) )) python3 results/h100/resnet50_e2e_tf32/e2e_tf32.py /tmp/r/e2e.json > /tmp/r/e2e.log 2>&1
echo "e2e rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -4 /tmp/r/e2e.log
cd /tmp && tar czf $OUT/r.tgz r
