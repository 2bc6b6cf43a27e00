# device call 8: start-up probe, empty CuPy / compute caches, then warm
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
echo "== empty caches"; CUPY_CACHE_DIR=/tmp/cp1 CUDA_CACHE_PATH=/tmp/cc1 timeout 120 python3 .probe/s16/startup_probe.py .probe/s16/rn50.journal
echo "== CuPy cache warm (compute cache empty)"; CUPY_CACHE_DIR=/tmp/cp1 CUDA_CACHE_PATH=/tmp/cc2 timeout 120 python3 .probe/s16/startup_probe.py .probe/s16/rn50.journal
