# device call 3 (seventeenth session, code d21706e): ResNet-50 from empty on one GPU (default
# workers) and on two (3 workers per GPU, the default on 32 cores, and 5), order A B C C B A.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
tune() {  # name args...
  local name=$1; shift
  [ $(( $(date +%s) - T0 )) -gt 520 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$name; mkdir -p /tmp/t_$name; s=$(date +%s.%N)
  CUPY_CACHE_DIR=/tmp/t_$name/cupy CUDA_CACHE_PATH=/tmp/t_$name/cc timeout 150 python3 -m autoconv tune examples/resnet50.yaml --storage /tmp/t_$name/s.journal --cache /tmp/t_$name/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  echo "tune $name rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp results/resnet50/tune.json $R/tune_$name.json
}
tune A1 --gpus 0
tune B1 --gpus all
tune C1 --gpus all --workers-per-gpu 5
tune C2 --gpus all --workers-per-gpu 5
tune B2 --gpus all
tune A2 --gpus 0
cd $OUT && tar czf r.tgz r && rm -rf r
