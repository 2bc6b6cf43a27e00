# device call 3 (twentieth session), asked for 2 x H100 (nvidia-h100-x2): ResNet-50 from empty storage
# and caches (--run-time-sizes, as the nineteenth session's two-GPU runs) on two GPUs and on one,
# order 2 1 1 2, code 6bcfc41; then the winners of the first two runs re-timed beside the committed
# 4x-budget run (results/h100/resnet50_n32) on GPU 0.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=/tmp/r; rm -rf $R; mkdir -p $R; T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
tune() {  # name gpus
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 110 python3 -m autoconv tune examples/resnet50.yaml --gpus $2 --run-time-sizes --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1.log | cut -c1-200
  cp results/resnet50/tune.json $R/tune_$1.json
  gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
compare() {
  left=$(( 580 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "compare $1 skipped" | tee -a $R/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0 timeout $(( left < 80 ? left : 80 )) python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/t_$1/c.sqlite3 $R/compare_$1.json > $R/compare_$1.log 2>&1
  echo "compare $1 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_$1.log
}
tune two_a all; tune one_a 0; tune one_b 0; tune two_b all
compare two_a; compare one_a
cd /tmp && tar czf $OUT/r.tgz r
