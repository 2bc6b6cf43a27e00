# Twenty-fifth session, call 1 (nvidia-h100-x1): the filters on wgmma's M side (M_OPERAND filters, d54a82d)
# on a GPU for the first time.
#   1. the TMA family's GPU tests (M_OPERAND filters among the configurations they run);
#   2. family_sweep on every tf32 layer: the twenty-fourth session's winners beside tiles turned round;
#   3. ncu: the two 3x3 layers at 14 x 14, 192 x 64 tiles with the pixels on M against 64 x 192 with the filters;
#   4. tf32 NHWC ResNet-50 at batch 32 tuned from empty storage and cache, then benchmarked.
#   bash results/h100/twentyfifth/call1.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
source results/h100/tune_and_bench.sh
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; ncu --version | tail -1
  python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py > /tmp/o/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/gpu_tests.log
F='"M_OPERAND": "filters", "EPILOGUE": "direct", "SCHEDULE": "cooperative", "SPLIT_K": 1'
timeout 240 python3 examples/family_sweep.py examples/resnet50_tf32_nhwc.yaml --family implicit_gemm_wgmma_tma \
  --base results/h100/resnet50_n32_tf32_nhwc/twentyfourth_session/results.json \
  --configs "[{}, {$F, \"CONSUMERS\": 1, \"BN\": 192, \"STAGES\": 6}, {$F, \"CONSUMERS\": 1, \"BN\": 192, \"STAGES\": 4},
             {$F, \"CONSUMERS\": 1, \"BN\": 128, \"STAGES\": 6}, {$F, \"CONSUMERS\": 1, \"BN\": 256, \"STAGES\": 4},
             {$F, \"CONSUMERS\": 2, \"BN\": 192, \"STAGES\": 4}]" \
  --out /tmp/o/sweep_tf32.json > /tmp/o/sweep_tf32.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -28 /tmp/o/sweep_tf32.log
timeout 150 ncu --clock-control none --profile-from-start off --set full --csv --page raw \
  python3 results/h100/twentyfifth/ncu_m_side.py > /tmp/o/ncu_raw.csv 2> /tmp/o/ncu.err
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/ncu.err; gzip /tmp/o/ncu_raw.csv
tune_and_bench tf32_nhwc examples/resnet50_tf32_nhwc.yaml /tmp/o 120 130
tar czf $OUT/call1.tgz -C /tmp/o .
