# device call 4 (twenty-second session), asked for an H100: the bench GPU tests (the PyTorch column's
# outputs now rotate), then ResNet-50 bf16 and tf32 NHWC at batch 32 at HEAD, each tuned from
# empty storage and caches and benchmarked against cuDNN's best plan in the same precision
# and layout, and against PyTorch timed like the others.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; git log -1 --format=%H 2>/dev/null; } > /tmp/r/env.txt 2>&1
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rfs tests/bench > /tmp/r/gpu_bench_tests.log 2>&1
echo "gpu bench tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -1 /tmp/r/gpu_bench_tests.log
for p in bf16 tf32; do
  case $p in
    bf16) config=examples/resnet50_bf16.yaml; made=results/resnet50_bf16 ;;
    tf32) config=examples/resnet50_tf32_nhwc.yaml; made=results/resnet50_tf32_nhwc ;;
  esac
  left=$(( 590 - ($(date +%s) - T0) )); [ $left -lt 150 ] && { echo "$p skipped, $left s left" | tee -a /tmp/r/times.txt; continue; }
  mkdir -p /tmp/r/$p; export AUTOCONV_CACHE=/tmp/t/$p/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/$p/cc; rm -rf /tmp/t/$p; mkdir -p /tmp/t/$p
  s=$(date +%s); timeout 100 python3 -m autoconv tune $config --storage /tmp/t/$p/studies.journal > /tmp/r/$p/tune.log 2>&1
  echo "$p tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/$p/tune.log | cut -c1-200
  cp $made/tune.json /tmp/r/$p/tune.json 2>/dev/null
  left=$(( 595 - ($(date +%s) - T0) ))
  s=$(date +%s); timeout $(( left < 90 ? left : 90 )) python3 -m autoconv bench $config --no-tune --out /tmp/r/$p/results.json > /tmp/r/$p/bench.log 2>&1
  echo "$p bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -1 /tmp/r/$p/bench.log | cut -c1-200
done
cd /tmp && tar czf $OUT/r.tgz r
