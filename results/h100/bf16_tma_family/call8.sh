# device call 8 (eleventh session, H100): the committed code's GPU tests of everything this session
# touched: the TMA family (worker, runtime launcher), the emulator's TMA and mbarrier models against
# the GPU, the cp.async family and the 16-bit worker.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; git log -1 --format=%H; } > /tmp/r/env.txt 2>&1
timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_tma_family.py tests/emulator/test_tma.py tests/emulator/test_mbarrier.py tests/emulator/test_wgmma_f16_family.py tests/gpu/test_16bit.py tests/torch/test_torch_16bit_gpu.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep -E "passed|failed|FAILED" /tmp/r/gpu_tests.log | tail -8
cp /tmp/r/* $OUT/
