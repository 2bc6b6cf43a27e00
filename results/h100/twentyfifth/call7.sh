# Twenty-fifth session, call 7 (nvidia-h100-x1): tiles of 32 filters in the TMA family for layers of fewer than 64
# filters (Inception-v3's Conv2d_2a_3x3: 0.80x cuDNN TF32 in call 6 with tiles of 64).
#   1. the TMA family's GPU tests (BN 32 among the widths they sample);
#   2. family_sweep on Conv2d_2a_3x3: call 6's winner beside tiles of 32 filters;
#   3. the Inception-v3 layers in tf32 NHWC tuned from empty and benchmarked again.
#   bash results/h100/twentyfifth/call7.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
source results/h100/tune_and_bench.sh
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc
  python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py > /tmp/o/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/gpu_tests.log
P='"M_OPERAND": "pixels", "SPLIT_K": 1, "BN": 32'
timeout 100 python3 examples/family_sweep.py results/h100/twentyfifth/inception_v3_tf32_nhwc.yaml --family implicit_gemm_wgmma_tma \
  --base results/h100/twentyfifth/call6/inception_v3_tf32_nhwc/results.json --layers Conv2d_2a_3x3 \
  --configs "[{}, {$P, \"CONSUMERS\": 1, \"STAGES\": 6, \"EPILOGUE\": \"direct\", \"SCHEDULE\": \"cooperative\"},
             {$P, \"CONSUMERS\": 2, \"STAGES\": 6, \"EPILOGUE\": \"direct\", \"SCHEDULE\": \"cooperative\"},
             {$P, \"CONSUMERS\": 3, \"STAGES\": 6, \"EPILOGUE\": \"direct\", \"SCHEDULE\": \"cooperative\"},
             {$P, \"CONSUMERS\": 2, \"STAGES\": 8, \"EPILOGUE\": \"direct\", \"SCHEDULE\": \"pingpong\"},
             {$P, \"CONSUMERS\": 3, \"STAGES\": 6, \"EPILOGUE\": \"staged\", \"SCHEDULE\": \"cooperative\"}]" \
  --out /tmp/o/sweep_bn32.json > /tmp/o/sweep_bn32.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -9 /tmp/o/sweep_bn32.log
tune_and_bench inception_v3_tf32_nhwc results/h100/twentyfifth/inception_v3_tf32_nhwc.yaml /tmp/o 150 150
tar czf $OUT/call7.tgz -C /tmp/o .
