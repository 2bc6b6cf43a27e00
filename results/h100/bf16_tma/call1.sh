# device call 1 (eleventh session): the TMA prototype on ResNet-50's bf16 layers, then the committed
# winners re-timed beside cuDNN's best plan in the same call (the anchor between the two processes).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; nvcc --version | tail -2;
  python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; git log -1 --format=%H 2>/dev/null; } > $OUT/env.txt 2>&1
T0=$(date +%s)
timeout 330 python3 results/h100/bf16_tma/tma_bench.py /tmp/tma $TMA_ARGS > $OUT/tma_bench.log 2>&1; echo "tma rc=$? $(( $(date +%s) - T0 ))s" >> $OUT/times.txt
cp /tmp/tma/tma_bench.json $OUT/ 2>/dev/null
timeout 200 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_f16 \
  --base results/h100/resnet50_n32_bf16/results.json --configs '[{}]' --layers "$SWEEP_LAYERS" --out $OUT/winners.json > $OUT/winners.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 ))s" >> $OUT/times.txt
tail -3 $OUT/tma_bench.log
