# device call (tenth session, H100): PAD_CHANNELS (x and w padded to 8 channels by a first kernel):
# the 16-bit family's GPU tests, then ResNet-50 bf16 and fp16 at batch 32 tuned from empty and benchmarked.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/r
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_f16_stream_k.py tests/emulator/test_wgmma_f16_family.py tests/gpu/test_16bit.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -2 /tmp/r/gpu_tests.log
for C in examples/resnet50_bf16.yaml results/h100/resnet50_n32_fp16/config.yaml; do
  d=$(basename $(dirname $C))_$(basename $C .yaml); rm -rf /tmp/t_$d; mkdir -p /tmp/t_$d
  export AUTOCONV_CACHE=/tmp/t_$d/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t_$d/cc
  s=$(date +%s); timeout 150 python3 -m autoconv tune $C --storage /tmp/t_$d/studies.journal > /tmp/r/${d}_tune.log 2>&1
  echo "$d tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/${d}_tune.log
  for j in results/resnet50_bf16/tune.json results/h100/resnet50_n32_fp16/tune.json; do [ -f $j ] && [ $j -nt /tmp/r/env.txt ] && cp $j /tmp/r/${d}_tune.json; done
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 30 ] && break
  s=$(date +%s); timeout $left python3 -m autoconv bench $C --no-tune --out /tmp/r/${d}_results.json > /tmp/r/${d}_bench.log 2>&1
  echo "$d bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/${d}_bench.log
done
cd /tmp && tar czf $OUT/r.tgz r
