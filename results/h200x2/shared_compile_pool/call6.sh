# device call 6 (fifteenth session): the host's shared compile pool (autoconv.gpu.compile_service, the
# working tree) on two GPUs of one host. First its GPU tests (stop if one fails); then ResNet-50 fp32
# from empty on 2 GPUs and on 1, both orders, and the code before it (07484be, .probe/old) once each,
# order: new2 new1 old1 old2 new1 new2. Every run: empty storage, winners' cache, compute cache and
# CuPy kernel cache; the default workers (one per 5 cores, at most 4 per GPU).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -x tests/gpu/test_compile_service.py tests/search/test_killed_tune.py tests/gpu/test_gpu.py -k "compile_service or killed or second_tune or tune_caches" > $R/tests.log 2>&1; rc=$?
echo "tests rc=$rc at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -2 $R/tests.log
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_compile_service.py >> $R/tests.log 2>&1; echo "cpu tests rc=$?" | tee -a $R/times.txt
[ $rc -ne 0 ] && { cd $OUT && tar czf r.tgz r && rm -rf r; exit 1; }
tune() {  # name code-root gpus
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s)
  (cd $2 && CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc PYTHONPATH=/tmp/site:$PWD timeout 130 python3 -m autoconv tune examples/resnet50.yaml --gpus $3 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? wall=$(( $(date +%s) - s ))s at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $2/results/resnet50/tune.json $R/tune_$1.json
}
tune new2a . all
tune new1a . 0
tune old1 .probe/old 0
tune old2 .probe/old all
tune new1b . 0
tune new2b . all
cd $OUT && tar czf r.tgz r && rm -rf r
