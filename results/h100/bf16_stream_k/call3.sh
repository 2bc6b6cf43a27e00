# device call 3 (tenth session, H100): SCHEDULE stream_k at batch 1 (few tiles per layer): a sweep
# of fixed configurations beside cuDNN, then a tune from empty whose winners say which schedule won.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/f3
T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD
C=results/h100/bf16_stream_k/resnet50_bf16_n1.yaml
timeout 200 python3 examples/family_sweep.py $C --family implicit_gemm_wgmma_f16 \
  --configs '[{}, {"BM": 64, "BN": 64, "WGN": 64}, {"BM": 64, "BN": 64, "WGN": 64, "SPLIT_K": 4}, {"SPLIT_K": 4}, {"SCHEDULE": "stream_k"}, {"BM": 64, "BN": 64, "WGN": 64, "SCHEDULE": "stream_k"}]' \
  --out /tmp/f3/sweep_n1.json > /tmp/f3/sweep_n1.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f3/times.txt
tail -8 /tmp/f3/sweep_n1.log
mkdir -p /tmp/tune3 && export AUTOCONV_CACHE=/tmp/tune3/cache.sqlite3 CUDA_CACHE_PATH=/tmp/tune3/cc
s=$(date +%s); timeout 150 python3 -m autoconv tune $C --storage /tmp/tune3/studies.journal > /tmp/f3/tune_n1.log 2>&1
echo "tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f3/times.txt
tail -2 /tmp/f3/tune_n1.log
cp results/resnet50_bf16_n1/tune.json /tmp/f3/tune_n1.json 2>/dev/null
s=$(date +%s); timeout $(( 560 - ($(date +%s) - T0) )) python3 -m autoconv bench $C --no-tune --no-torch --out /tmp/f3/results_n1.json > /tmp/f3/bench_n1.log 2>&1
echo "bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f3/times.txt
tail -3 /tmp/f3/bench_n1.log
cd /tmp && tar czf $OUT/f3.tgz f3
