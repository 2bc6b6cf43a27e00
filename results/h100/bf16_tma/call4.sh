# device call 4 (eleventh session, H100): the TMA prototype with the staged epilogue, then the
# committed bf16 winners beside cuDNN's best plan (examples/family_sweep.py), in one call.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site:$PWD
T0=$(date +%s)
timeout 300 python3 results/h100/bf16_tma/tma_bench.py /tmp/tma > /tmp/tma_bench.log 2>&1; echo "tma rc=$? $(( $(date +%s) - T0 ))s" >> /tmp/tma_bench.log
timeout 200 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_f16 \
  --base results/h100/resnet50_n32_bf16/results.json --configs '[{}]' --out /tmp/tma/winners.json > /tmp/tma/winners.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 ))s" >> /tmp/tma_bench.log
cp /tmp/tma_bench.log /tmp/tma/; cd /tmp/tma && tar czf $OUT/call4.tgz *.json *.log
