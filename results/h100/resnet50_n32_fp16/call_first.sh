# device call (tenth session, H100): the 16-bit family's GPU tests after e242158, then ResNet-50
# in fp16 at batch 32 and in bf16 at batch 128, each tuned from empty and benchmarked against
# cuDNN's best plan of the same precision and layout and PyTorch (issue 17's reports).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/r
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_f16_stream_k.py tests/emulator/test_wgmma_f16_family.py tests/gpu/test_16bit.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -2 /tmp/r/gpu_tests.log
for d in resnet50_n32_fp16 resnet50_n128_bf16; do
  C=results/h100/$d/config.yaml; rm -rf /tmp/t_$d; mkdir -p /tmp/t_$d
  export AUTOCONV_CACHE=/tmp/t_$d/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t_$d/cc
  s=$(date +%s); timeout 170 python3 -m autoconv tune $C --storage /tmp/t_$d/studies.journal > /tmp/r/${d}_tune.log 2>&1
  echo "$d tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/${d}_tune.log
  cp results/h100/$d/tune.json /tmp/r/${d}_tune.json 2>/dev/null
  left=$(( 580 - ($(date +%s) - T0) )); [ $left -lt 30 ] && break
  s=$(date +%s); timeout $left python3 -m autoconv bench $C --no-tune --out /tmp/r/${d}_results.json > /tmp/r/${d}_bench.log 2>&1
  echo "$d bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/${d}_bench.log
done
cd /tmp && tar czf $OUT/r.tgz r
