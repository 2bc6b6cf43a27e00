# device call 6 (eleventh session, H100): after the split-K epilogue fix, the TMA family's GPU tests;
# then ResNet-50 bf16 at batch 32 tuned from empty with both 16-bit families and benchmarked.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_tma_family.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep -E "passed|failed" /tmp/r/gpu_tests.log | tail -2
export AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc; rm -rf /tmp/t; mkdir -p /tmp/t
s=$(date +%s); timeout 200 python3 -m autoconv tune examples/resnet50_bf16.yaml --storage /tmp/t/studies.journal > /tmp/r/tune.log 2>&1
echo "tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/tune.log
cp results/resnet50_bf16/tune.json /tmp/r/tune.json 2>/dev/null
left=$(( 585 - ($(date +%s) - T0) ))
s=$(date +%s); timeout $left python3 -m autoconv bench examples/resnet50_bf16.yaml --no-tune --out /tmp/r/results.json > /tmp/r/bench.log 2>&1
echo "bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -4 /tmp/r/bench.log
cp results/resnet50_bf16/report.md results/resnet50_bf16/results.csv /tmp/r/ 2>/dev/null
cd /tmp && tar czf $OUT/r.tgz r
