# device call 9 (sixteenth session): the GPU worker replies "ready" before its warm-up (working tree on e74898e)
# against e74898e (.probe/old), VGG-16 from empty caches, order new old old new; then the GPU worker's tests.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $R/env.txt 2>&1
tune() {  # name code-root
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  (cd $2 && CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m autoconv tune examples/vgg16.yaml --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $2/results/vgg16/tune.json $R/tune_$1.json; gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune new1 .
tune old1 .probe/old
tune old2 .probe/old
tune new2 .
export PYTHONPATH=/tmp/site:$PWD
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu tests/search tests/runtime > $R/tests.log 2>&1; echo "tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -2 $R/tests.log
cd $OUT && tar czf r.tgz r && rm -rf r
