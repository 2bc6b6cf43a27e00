# device call 6 (twenty-second session), asked for an H100: tf32 NHWC ResNet-50 at batch 32 tuned
# from empty and benchmarked, to check that every layer's PyTorch column is measured once each
# capture's memory is released (call 5's two tf32 bench runs lost it on 2 layers each).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc
rm -rf /tmp/t /tmp/o; mkdir -p /tmp/t /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
timeout 80 python3 -m autoconv tune examples/resnet50_tf32_nhwc.yaml --storage /tmp/t/studies.journal > /tmp/o/tune.log 2>&1
echo "tune rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep "tuning took" /tmp/o/tune.log | cut -c1-200
cp results/resnet50_tf32_nhwc/tune.json /tmp/o/ 2>/dev/null
timeout 100 python3 -m autoconv bench examples/resnet50_tf32_nhwc.yaml --no-tune --out /tmp/o/results.json > /tmp/o/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep -c "left out" /tmp/o/bench.log
gzip /tmp/o/tune.log; tar czf $OUT/call6.tgz -C /tmp/o .
