# Prepared in the twenty-second session for the next device session (not run): the TMA family's
# tensor-map prefetch, A/B on the same configurations (ab.py), bf16 then tf32 NHWC ResNet-50 at
# batch 32, each layer's winner of the twenty-second session's runs on an H100; then the TMA copy
# tests on the GPU (the boxes of the prefetching test kernel against the model). ~3-4 min.
#   bash results/h100/tma_prefetch/call1.sh   (carry [".whl"], ask for nvidia-h100-x1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy;print(cupy.__version__)"; } > $R/env.txt 2>&1
timeout 200 python3 results/h100/tma_prefetch/ab.py examples/resnet50_bf16.yaml \
  results/h100/twentysecond/call5/bf16/results.json $R/ab_bf16.json > $R/ab_bf16.log 2>&1
echo "bf16 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/ab_bf16.log
timeout 200 python3 results/h100/tma_prefetch/ab.py examples/resnet50_tf32_nhwc.yaml \
  results/h100/twentysecond/call6/results.json $R/ab_tf32.json > $R/ab_tf32.log 2>&1
echo "tf32 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/ab_tf32.log
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_tma.py > $R/gpu_tma_tests.log 2>&1
echo "tma gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/gpu_tma_tests.log
