# Twenty-third session: the TMA family's ring position, A/B on the twenty-third session's bf16 and
# tf32 winners (ab.py), then the TMA family's GPU tests.
#   bash results/h100/ring_position/call1.sh   (carry [".whl"], nvidia-h100-x1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; } > $R/env.txt 2>&1
timeout 200 python3 results/h100/ring_position/ab.py examples/resnet50_bf16.yaml \
  results/h100/resnet50_n32_bf16/twentythird_session/results.json $R/ab_bf16.json > $R/ab_bf16.log 2>&1
echo "bf16 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/ab_bf16.log
timeout 200 python3 results/h100/ring_position/ab.py examples/resnet50_tf32_nhwc.yaml \
  results/h100/resnet50_n32_tf32_nhwc/twentythird_session/results.json $R/ab_tf32.json > $R/ab_tf32.log 2>&1
echo "tf32 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/ab_tf32.log
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_tma_family.py tests/emulator/test_tma.py > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/gpu_tests.log
