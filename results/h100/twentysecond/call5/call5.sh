# device call 5 (twenty-second session), asked for an H100: the torch GPU tests of the bench, then
# ResNet-50 bf16 and tf32 NHWC at batch 32 (every PyTorch call writing its own output), each tuned from
# empty storage and caches and benchmarked against cuDNN's best plan in the same precision
# and layout, and against PyTorch timed like the others.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf $OUT/r; mkdir -p $OUT/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; git log -1 --format=%H 2>/dev/null; } > $OUT/r/env.txt 2>&1
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -rfs tests/bench -k torch > $OUT/r/gpu_bench_tests.log 2>&1
echo "gpu bench tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $OUT/r/times.txt; tail -1 $OUT/r/gpu_bench_tests.log
for p in tf32 bf16; do
  case $p in
    bf16) config=examples/resnet50_bf16.yaml; made=results/resnet50_bf16 ;;
    tf32) config=examples/resnet50_tf32_nhwc.yaml; made=results/resnet50_tf32_nhwc ;;
  esac
  left=$(( 470 - ($(date +%s) - T0) )); [ $left -lt 150 ] && { echo "$p skipped, $left s left" | tee -a $OUT/r/times.txt; continue; }
  mkdir -p $OUT/r/$p; export AUTOCONV_CACHE=/tmp/t/$p/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/$p/cc; rm -rf /tmp/t/$p; mkdir -p /tmp/t/$p
  s=$(date +%s); timeout 100 python3 -m autoconv tune $config --storage /tmp/t/$p/studies.journal > $OUT/r/$p/tune.log 2>&1
  echo "$p tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a $OUT/r/times.txt; grep "tuning took" $OUT/r/$p/tune.log | cut -c1-200
  cp $made/tune.json $OUT/r/$p/tune.json 2>/dev/null
  left=$(( 480 - ($(date +%s) - T0) ))
  s=$(date +%s); timeout $(( left < 90 ? left : 90 )) python3 -m autoconv bench $config --no-tune --out $OUT/r/$p/results.json > $OUT/r/$p/bench.log 2>&1
  echo "$p bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a $OUT/r/times.txt; tail -1 $OUT/r/$p/bench.log | cut -c1-200
done

