# device call (twelfth session, H100): the TMA copies' TF32 rounding and the TMA family's kernels on
# the GPU (tests); ResNet-50 tf32 NHWC at batch 32 tuned from empty storage and cache and
# benchmarked against cuDNN's best TF32 (and strict) plans in NHWC and PyTorch; with `bf16` as the
# first argument, then the same for examples/resnet50_bf16.yaml (both 16-bit families) in /tmp/r/bf16.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r/bf16; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_tma.py tests/emulator/test_wgmma_tma_family.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep -E "passed|failed" /tmp/r/gpu_tests.log | tail -2
tune_and_bench() {   # config, output folder, results folder, seconds left for the bench
    export AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc; rm -rf /tmp/t; mkdir -p /tmp/t
    s=$(date +%s); timeout 200 python3 -m autoconv tune $1 --storage /tmp/t/studies.journal > $2/tune.log 2>&1
    echo "$1 tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" $2/tune.log
    cp $3/tune.json $2/tune.json 2>/dev/null
    s=$(date +%s); timeout $4 python3 -m autoconv bench $1 --no-tune --out $2/results.json > $2/bench.log 2>&1
    echo "$1 bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 $2/bench.log
}
tune_and_bench examples/resnet50_tf32_nhwc.yaml /tmp/r results/resnet50_tf32_nhwc 150
if [ "${1:-}" = bf16 ]; then
    tune_and_bench examples/resnet50_bf16.yaml /tmp/r/bf16 results/resnet50_bf16 $(( 585 - ($(date +%s) - T0) - 75 ))
fi
cd /tmp && tar czf $OUT/r.tgz r
