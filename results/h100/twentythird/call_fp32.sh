# Twenty-third session, asked for an H100: fp32 (float32 accuracy) ResNet-50 at batch 32 tuned from
# empty storage and cache and benchmarked in this call, with the cp.async wgmma families'
# warp-uniform warpgroup index (b018881): does fp32 stay >= 1.8x cuDNN strict, all 23 faster?
#   bash results/h100/twentythird/call_fp32.sh   (carry [".whl"], nvidia-h100-x1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc
rm -rf /tmp/t /tmp/o; mkdir -p /tmp/t /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
timeout 280 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/t/studies.journal > /tmp/o/tune.log 2>&1
echo "tune rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep "tuning took" /tmp/o/tune.log | cut -c1-200
cp results/resnet50/tune.json /tmp/o/ 2>/dev/null
timeout 250 python3 -m autoconv bench examples/resnet50.yaml --no-tune --out /tmp/o/results.json > /tmp/o/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep -i "geomean" /tmp/o/bench.log | tail -2
gzip /tmp/o/tune.log; tar czf $OUT/call_fp32.tgz -C /tmp/o .
