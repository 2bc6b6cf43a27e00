# device call 4 (twentieth session), asked for an H100: call 2's ResNet-50 pair in the other order,
# old (8be9540, .probe/old20) then new (6bcfc41), each from empty storage and caches; then the new
# run's winners re-timed beside the committed 4x-budget run.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=/tmp/r; rm -rf $R; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
tune() {  # name code-root
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  (cd $2 && CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1.log | cut -c1-200
  cp $2/results/resnet50/tune.json $R/tune_$1.json; gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune rn50_old2 .probe/old20
tune rn50_new2 .
timeout 90 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/t_rn50_new2/c.sqlite3 $R/compare_rn50_new2.json > $R/compare_rn50_new2.log 2>&1
echo "compare rn50_new2 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_rn50_new2.log
cd /tmp && tar czf $OUT/r.tgz r
