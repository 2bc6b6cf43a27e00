# device call 6 (eighteenth session): with --run-time-sizes, one GPU against two GPUs of one host (order
# 1 2 2 1), ResNet-50 from empty caches, this working tree.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
tune() {  # name extra-flags
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 150 python3 -m autoconv tune examples/resnet50.yaml $2 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp results/resnet50/tune.json $R/tune_$1.json
}
tune rn50_1gpu_a "--gpus 0 --run-time-sizes"
tune rn50_2gpu_a "--gpus all --run-time-sizes"
tune rn50_2gpu_b "--gpus all --run-time-sizes"
tune rn50_1gpu_b "--gpus 0 --run-time-sizes"
cd $OUT && tar czf r.tgz r && rm -rf r
