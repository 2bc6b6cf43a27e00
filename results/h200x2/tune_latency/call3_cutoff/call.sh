# device call 3 (nineteenth session): the cut-off of slow candidates (this tree) against the same tree without it (.probe/b19)
# ResNet-50, --run-time-sizes, empty caches, order C2 B2 B1 C1 C1 C2.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R; T0=$(date +%s); NEW=$PWD; OLD=$PWD/.probe/b19
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
cd $NEW && PYTHONPATH=/tmp/site:$NEW timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu.py -k "timer or first_before or prepared_plan or abandons or verifies_times" > $R/gpu_tests.log 2>&1; echo "gpu tests rc=$?" >> $R/times.txt
tune() {  # name code-dir gpus
  [ $(( $(date +%s) - T0 )) -gt 480 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  (cd $2 && PYTHONPATH=/tmp/site:$2 CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 150 python3 -m autoconv tune examples/resnet50.yaml --gpus $3 --run-time-sizes --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $2/results/resnet50/tune.json $R/tune_$1.json
  gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune new2a $NEW all; tune old2a $OLD all; tune old1a $OLD 0; tune new1a $NEW 0
tune new1b $NEW 0; tune new2b $NEW all
cd $OUT && tar czf r.tgz r && rm -rf r
tar xzf r.tgz -O r/times.txt; ls -la $OUT
