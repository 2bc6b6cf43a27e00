# device call 1 (nineteenth session): where a tune's time goes with --run-time-sizes on two GPUs
# and one (phases_s, the candidates' queue waits), and whether the journal's fsync bounds it.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; lscpu | head -20; df -h /tmp; mount | grep -E " / | /tmp " ;
  python3 -c "import cupy,torch,optuna;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version(),optuna.__version__)"; git log -1 --format=%H; } > $R/env.txt 2>&1
python3 .probe/call1/fsync_probe.py /tmp/fsync_probe.journal 2000 > $R/fsync.txt 2>&1
tune() {  # name extra-flags [env]
  [ $(( $(date +%s) - T0 )) -gt 470 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  env $3 PYTHONPATH=/tmp/site:$PWD:$PWD/.probe/call1/site CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 150 python3 -m autoconv tune examples/resnet50.yaml $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp results/resnet50/tune.json $R/tune_$1.json
  gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune 2gpu_a "--gpus all --run-time-sizes" "X=1"
tune 2gpu_nofsync "--gpus all --run-time-sizes" "AUTOCONV_PROBE_NOFSYNC=1"
tune 1gpu_nofsync "--gpus 0 --run-time-sizes" "AUTOCONV_PROBE_NOFSYNC=1"
tune 1gpu_a "--gpus 0 --run-time-sizes" "X=1"
tune 2gpu_prof "--gpus all --run-time-sizes" "AUTOCONV_PROBE_PROFILE=/tmp/prof"
[ -d /tmp/prof ] && tar czf $R/prof.tgz -C /tmp prof
ls -la $R
