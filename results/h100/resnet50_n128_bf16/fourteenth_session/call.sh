# device call 6 (fourteenth session), asked for an H100: ResNet-50 bf16 NHWC at batch 128 tuned
# from empty storage and caches and benchmarked against cuDNN's best bf16 plan (the stem's
# padded pixels of 64 bytes: PAD_PITCH).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
config=results/h100/resnet50_n128_bf16/config.yaml
export AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc; rm -rf /tmp/t; mkdir -p /tmp/t
s=$(date +%s); timeout 200 python3 -m autoconv tune $config --storage /tmp/t/studies.journal > /tmp/r/tune.log 2>&1
echo "tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/tune.log | cut -c1-200
cp results/h100/resnet50_n128_bf16/tune.json /tmp/r/tune.json
s=$(date +%s); timeout $(( 560 - ($(date +%s) - T0) )) python3 -m autoconv bench $config --no-tune --out /tmp/r/results.json > /tmp/r/bench.log 2>&1
echo "bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -1 /tmp/r/bench.log | cut -c1-200
cd /tmp && tar czf $OUT/r.tgz r
