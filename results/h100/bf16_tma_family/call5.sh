# device call 5 (eleventh session, H100): implicit_gemm_wgmma_tma through autoconv: its GPU tests
# (the worker, the runtime launcher), then its seed configurations on every ResNet-50 bf16 layer
# beside cuDNN's best plan (examples/family_sweep.py).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_tma_family.py tests/gpu/test_16bit.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -15 /tmp/r/gpu_tests.log | cut -c1-400
timeout 280 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_tma \
  --configs '[{"BN":128,"CONSUMERS":1,"STAGES":6,"SPLIT_K":1},{"BN":256,"CONSUMERS":1,"STAGES":4,"SPLIT_K":1},{"BN":64,"CONSUMERS":2,"STAGES":6,"SPLIT_K":1},{"BN":256,"CONSUMERS":2,"STAGES":3,"SPLIT_K":1},{"BN":128,"CONSUMERS":2,"STAGES":5,"SPLIT_K":1}]' \
  --out /tmp/r/sweep.json > /tmp/r/sweep.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -8 /tmp/r/sweep.log
cd /tmp && tar czf $OUT/r.tgz r
