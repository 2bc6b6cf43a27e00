# Twenty-fifth session, call 4 (nvidia-h100-x1): the filters on wgmma's M side for 16-bit outputs too, through a
# transposed staged epilogue (and for float32 outputs beside the direct one).
#   1. the TMA family's GPU tests (every epilogue path among the configurations they sample);
#   2. family_sweep on every bf16 layer: the twenty-fourth session's winners beside tiles turned round, staged;
#   3. bf16, fp16 and tf32 NHWC ResNet-50 at batch 32, each tuned from empty storage and cache, then benchmarked.
#   bash results/h100/twentyfifth/call4.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
source results/h100/tune_and_bench.sh
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc
  python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py > /tmp/o/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/gpu_tests.log
F='"M_OPERAND": "filters", "EPILOGUE": "staged", "SCHEDULE": "cooperative", "SPLIT_K": 1'
timeout 100 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_tma \
  --base results/h100/resnet50_n32_bf16/twentyfourth_session/results.json \
  --configs "[{}, {$F, \"CONSUMERS\": 1, \"BN\": 192, \"STAGES\": 6}, {$F, \"CONSUMERS\": 1, \"BN\": 128, \"STAGES\": 8},
             {$F, \"CONSUMERS\": 2, \"BN\": 192, \"STAGES\": 5}, {$F, \"CONSUMERS\": 1, \"BN\": 256, \"STAGES\": 4}]" \
  --out /tmp/o/sweep_bf16.json > /tmp/o/sweep_bf16.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -12 /tmp/o/sweep_bf16.log
tune_and_bench bf16 examples/resnet50_bf16.yaml /tmp/o 100 90
tune_and_bench fp16 results/h100/resnet50_n32_fp16/config.yaml /tmp/o 90 80
tune_and_bench tf32_nhwc examples/resnet50_tf32_nhwc.yaml /tmp/o 100 90
tar czf $OUT/call4.tgz -C /tmp/o .
