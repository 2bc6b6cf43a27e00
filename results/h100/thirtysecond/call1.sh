# device call 1 (thirty-second session), nvidia-h200-x2: ResNet-50 from empty storage and caches
# on two GPUs and on one, order two one one two, HEAD code (no --run-time-sizes: the command users run);
# host CPU busy sampled from /proc/stat every 0.5 s; then the first two runs' winners re-timed.
#   bash results/h100/thirtysecond/call1.sh   (device tool, nvidia-h200-x2: carry [".whl"]; it ran as a copy outside the tree, at 9fc8da1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=/tmp/r; rm -rf $R; mkdir -p $R; T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch,optuna;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version(),optuna.__version__)"; } > $R/env.txt 2>&1
cpu_sampler() { while true; do echo "$(date +%s.%N) $(head -1 /proc/stat)"; sleep 0.5; done; }
tune() {  # name gpus
  [ $(( $(date +%s) - T0 )) -gt 400 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  cpu_sampler > $R/cpu_$1.txt & SP=$!
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 120 python3 -m autoconv tune examples/resnet50.yaml --gpus $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  rc=$?; kill $SP
  echo "tune $1 rc=$rc start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$1.log | cut -c1-200
  cp results/resnet50/tune.json $R/tune_$1.json
  gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
compare() {
  left=$(( 570 - ($(date +%s) - T0) )); [ $left -lt 45 ] && { echo "compare $1 skipped" | tee -a $R/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0 timeout $(( left < 80 ? left : 80 )) python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/t_$1/c.sqlite3 $R/compare_$1.json > $R/compare_$1.log 2>&1
  echo "compare $1 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/compare_$1.log
}
tune two_a all; tune one_a 0; tune one_b 0; tune two_b all
compare two_a; compare one_a
cd /tmp && tar czf $OUT/r.tgz r
