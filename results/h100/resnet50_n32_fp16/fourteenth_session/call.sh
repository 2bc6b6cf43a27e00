# device call 5 (fourteenth session), asked for an H100: the TMA family's GPU tests (the padding
# kernel again a chunk per thread, coalesced, its row indices divided once in 32 bits), then
# ResNet-50 bf16, tf32 and fp16 NHWC at batch 32, each tuned from empty storage and caches and
# benchmarked against cuDNN's best plan in the same precision; then the stem's candidates.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 100 python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/emulator/test_wgmma_tma_family.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -1 /tmp/r/gpu_tests.log
for p in bf16 tf32 fp16; do
  case $p in
    bf16) config=examples/resnet50_bf16.yaml; made=results/resnet50_bf16 ;;
    tf32) config=examples/resnet50_tf32_nhwc.yaml; made=results/resnet50_tf32_nhwc ;;
    fp16) config=results/h100/resnet50_n32_fp16/config.yaml; made=results/h100/resnet50_n32_fp16 ;;
  esac
  mkdir -p /tmp/r/$p; export AUTOCONV_CACHE=/tmp/t/$p/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/$p/cc; rm -rf /tmp/t/$p; mkdir -p /tmp/t/$p
  s=$(date +%s); timeout 100 python3 -m autoconv tune $config --storage /tmp/t/$p/studies.journal > /tmp/r/$p/tune.log 2>&1
  echo "$p tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/$p/tune.log | cut -c1-200
  cp $made/tune.json /tmp/r/$p/tune.json 2>/dev/null
  s=$(date +%s); timeout 90 python3 -m autoconv bench $config --no-tune --out /tmp/r/$p/results.json > /tmp/r/$p/bench.log 2>&1
  echo "$p bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -1 /tmp/r/$p/bench.log | cut -c1-200
done
left=$(( 580 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left python3 results/h100/stem/stem_probe.py times > /tmp/r/stem_times.log 2>&1
echo "stem rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -20 /tmp/r/stem_times.log
cd /tmp && tar czf $OUT/r.tgz r
