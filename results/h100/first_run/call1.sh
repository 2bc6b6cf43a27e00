# device call 1 (fifteenth session): where a fresh machine's first VGG-16 tune loses its GPU seconds.
# A tune on the fresh machine first; then probe.py with an empty and then a filled CuPy kernel cache;
# then VGG-16 tunes with an empty CuPy cache, with the first tune's, and empty again. Every tune has
# an empty Optuna storage, winners' cache and compute cache (CUDA_CACHE_PATH).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/r; mkdir -p $R
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"
  echo "~/.cupy/kernel_cache files: $(find ~/.cupy/kernel_cache -type f 2>/dev/null | wc -l)"; echo "~/.nv/ComputeCache files: $(find ~/.nv/ComputeCache -type f 2>/dev/null | wc -l)"; } > $R/env.txt 2>&1
tune() {  # name cupy-cache-dir
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s)
  CUPY_CACHE_DIR=$2 CUDA_CACHE_PATH=/tmp/t_$1/cc timeout 150 python3 -m autoconv tune examples/vgg16.yaml --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1
  echo "tune $1 rc=$? wall=$(( $(date +%s) - s ))s cupy files $(find $2 -type f | wc -l) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp results/vgg16/tune.json $R/tune_$1.json; gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune fresh /tmp/cupy_fresh
CUPY_CACHE_DIR=/tmp/cupy_p CUDA_CACHE_PATH=/tmp/cc_p timeout 170 python3 results/h100/first_run/probe.py vgg16 resnet50 > $R/probe_cold.log 2>&1; echo "probe cold rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
CUPY_CACHE_DIR=/tmp/cupy_p CUDA_CACHE_PATH=/tmp/cc_p timeout 60 python3 results/h100/first_run/probe.py vgg16 > $R/probe_warm.log 2>&1; echo "probe warm rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
tune cold1 /tmp/cupy_cold1
tune warm /tmp/cupy_fresh
tune cold2 /tmp/cupy_cold2
