# Twenty-fourth session, call 6 (nvidia-h100-x1): the whole GPU suite at 67810c2's kernels, then fp16 NHWC
# ResNet-50 at batch 32 tuned from empty storage and cache and benchmarked.
#   bash results/h100/twentyfourth/call6.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
timeout 400 python3 -m pytest -q -p no:cacheprovider -m gpu tests > /tmp/o/gpu_suite.log 2>&1
echo "gpu suite rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -4 /tmp/o/gpu_suite.log
P=resnet50_n32_fp16
export AUTOCONV_CACHE=/tmp/t_$P/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t_$P/cc
rm -rf /tmp/t_$P; mkdir -p /tmp/t_$P /tmp/o/$P
timeout 100 python3 -m autoconv tune results/h100/$P/config.yaml --storage /tmp/t_$P/studies.journal > /tmp/o/$P/tune.log 2>&1
echo "$P tune rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep "tuning took" /tmp/o/$P/tune.log | cut -c1-200
cp results/h100/$P/tune.json /tmp/o/$P/ 2>/dev/null
timeout 80 python3 -m autoconv bench results/h100/$P/config.yaml --no-tune --out /tmp/o/$P/results.json > /tmp/o/$P/bench.log 2>&1
echo "$P bench rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep -i "geomean" /tmp/o/$P/bench.log | tail -1
gzip /tmp/o/$P/tune.log
tar czf $OUT/call6.tgz -C /tmp/o .
