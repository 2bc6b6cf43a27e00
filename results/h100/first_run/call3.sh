# device call 3 (fifteenth session): the verification's own sums (autoconv.verify.device_sums, the working tree) beside
# 8ec1f5b (.probe/old), each VGG-16 tune from an empty CuPy kernel cache, compute cache, storage and
# winners' cache, alternating old new new old; probe.py with an empty CuPy cache (CUB on, as by default);
# the new GPU tests; the probe's steady state (filled caches), old and new alternating.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
tune() {  # name code-root
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s)
  (cd $2 && CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m autoconv tune examples/vgg16.yaml --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? wall=$(( $(date +%s) - s ))s cupy files $(find /tmp/t_$1/cupy -type f | wc -l) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $2/results/vgg16/tune.json $R/tune_$1.json; gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune old1 .probe/old
tune new1 .
tune new2 .
tune old2 .probe/old
export PYTHONPATH=/tmp/site:$PWD
CUPY_CACHE_DIR=/tmp/cupy_p CUDA_CACHE_PATH=/tmp/cc_p timeout 120 python3 results/h100/first_run/probe.py vgg16 > $R/probe_sums.log 2>&1; echo "probe sums rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
# steady state (kernel caches filled): the evaluations' seconds, old code and new, each run twice
CUPY_CACHE_DIR=/tmp/cupy_o CUDA_CACHE_PATH=/tmp/cc_o PYTHONPATH=/tmp/site:$PWD/.probe/old timeout 120 python3 results/h100/first_run/probe.py vgg16 > /dev/null 2>&1
for round in 1 2; do
  CUPY_CACHE_DIR=/tmp/cupy_o CUDA_CACHE_PATH=/tmp/cc_o PYTHONPATH=/tmp/site:$PWD/.probe/old timeout 120 python3 results/h100/first_run/probe.py vgg16 > $R/probe_warm_old$round.log 2>&1
  CUPY_CACHE_DIR=/tmp/cupy_p CUDA_CACHE_PATH=/tmp/cc_p timeout 120 python3 results/h100/first_run/probe.py vgg16 > $R/probe_warm_new$round.log 2>&1
done; echo "warm probes at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_gpu.py -k "no_cupy_kernel or verifies_times or device_sums" > $R/tests.log 2>&1; echo "tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/tests.log
cd $OUT && tar czf r.tgz r && rm -rf r
