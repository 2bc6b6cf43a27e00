# device call (twelfth session, H100): the whole GPU test suite; then the default configuration of
# each 16-bit family (what autoconv.conv2d runs on an untuned shape) on ResNet-50's bf16 layers,
# beside cuDNN's best plan (examples/family_sweep.py).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider tests > /tmp/r/gpu_suite.log 2>&1
echo "gpu suite rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/gpu_suite.log
export AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc; rm -rf /tmp/t; mkdir -p /tmp/t
for family in implicit_gemm_wgmma_f16 implicit_gemm_wgmma_tma; do
    timeout 120 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family $family --configs '[{}]' \
        --out /tmp/r/$family.json > /tmp/r/$family.log 2>&1
    echo "$family rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -2 /tmp/r/$family.log
done
cd /tmp && tar czf $OUT/r.tgz r
