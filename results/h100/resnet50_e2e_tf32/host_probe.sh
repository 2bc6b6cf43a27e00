# device call 1 (fourteenth session): tf32 NHWC tuned from empty, then the host-time probe of the
# tf32 channels_last forward.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; lscpu | grep -E "Model name|MHz"; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
export AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc; rm -rf /tmp/t; mkdir -p /tmp/t
s=$(date +%s); timeout 150 python3 -m autoconv tune examples/resnet50_tf32_nhwc.yaml --storage /tmp/t/studies.journal > /tmp/r/tune.log 2>&1
echo "tune rc=$? wall=$(( $(date +%s) - s ))" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/tune.log
s=$(date +%s); timeout 300 python3 results/h100/resnet50_e2e_tf32/host_probe.py /tmp/r/host_probe.json > /tmp/r/host_probe.log 2>&1
echo "probe rc=$? wall=$(( $(date +%s) - s ))" | tee -a /tmp/r/times.txt; head -8 /tmp/r/host_probe.log; grep "sum over" /tmp/r/host_probe.log
cp /tmp/t/cache.sqlite3 /tmp/r/ 2>/dev/null
cd /tmp && tar czf $OUT/r.tgz r
