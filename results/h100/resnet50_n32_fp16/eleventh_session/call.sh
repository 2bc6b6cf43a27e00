# device call 7 (eleventh session, H100):
# fp16 at batch 32 and bf16 at batch 128 tuned from empty with both 16-bit families and benchmarked.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
for C in results/h100/resnet50_n32_fp16/config.yaml results/h100/resnet50_n128_bf16/config.yaml; do
  d=$(basename $(dirname $C)); rm -rf /tmp/t_$d; mkdir -p /tmp/t_$d
  export AUTOCONV_CACHE=/tmp/t_$d/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t_$d/cc
  s=$(date +%s); timeout 200 python3 -m autoconv tune $C --storage /tmp/t_$d/studies.journal > /tmp/r/${d}_tune.log 2>&1
  echo "$d tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep "tuning took" /tmp/r/${d}_tune.log
  [ -f $(dirname $C)/tune.json ] && [ $(dirname $C)/tune.json -nt /tmp/r/env.txt ] && cp $(dirname $C)/tune.json /tmp/r/${d}_tune.json
  left=$(( 590 - ($(date +%s) - T0) )); [ $left -lt 30 ] && break
  s=$(date +%s); timeout $left python3 -m autoconv bench $C --no-tune --out /tmp/r/${d}_results.json > /tmp/r/${d}_bench.log 2>&1
  echo "$d bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/${d}_bench.log
done
cd /tmp && tar czf $OUT/r.tgz r
