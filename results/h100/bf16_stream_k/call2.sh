# device call 2 (tenth session, H100): after the fix-up's batched loads and the grid of every
# resident block: the committed bf16 winners against stream_k again (one process, beside cuDNN),
# ncu on two layers, then the bf16 ResNet-50 tune from empty (stream_k in the space) and its bench.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/f
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/f/env.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
timeout 150 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_f16 \
  --base results/h100/resnet50_n32_bf16/results.json \
  --configs '[{}, {"SCHEDULE": "stream_k", "SPLIT_K": 1}]' --out /tmp/f/sweep.json > /tmp/f/sweep.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
tail -4 /tmp/f/sweep.log
L4='N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,precision=bf16,layout=NHWC'
L1='N=32,C=64,H=56,W=56,K=64,R=1,S=1,precision=bf16,layout=NHWC'
W4='"BK": 64, "BM": 64, "BN": 128, "MIN_BLOCKS": 1, "MMA_PENDING": 1, "STAGES": 4, "WGN": 128'
W1=$(python3 -c "import json;[print(json.dumps(p['params'])[1:-1]) for p in json.load(open('results/h100/resnet50_n32_bf16/results.json'))['problems'] if p['name']=='resnet50.layer1.0.conv1']")
i=0
for run in "$L4|$W4, \"SPLIT_K\": 2" "$L4|$W4, \"SPLIT_K\": 1, \"SCHEDULE\": \"stream_k\"" "$L1|$W1" "$L1|$W1, \"SCHEDULE\": \"stream_k\""; do
  i=$((i+1)); spec=${run%%|*}; cfg="{${run#*|}}"
  timeout 60 ncu --kernel-name regex:'SCHEDULE.*[0-9a-f]$' --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
    python3 results/h100/bf16_stream_k/launch_one.py "$spec" "$cfg" > /tmp/f/ncu_$i.txt 2>&1
  echo "ncu $i rc=$? $cfg at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
done
mkdir -p /tmp/tune && export AUTOCONV_CACHE=/tmp/tune/cache.sqlite3 CUDA_CACHE_PATH=/tmp/tune/cc
s=$(date +%s); timeout 150 python3 -m autoconv tune examples/resnet50_bf16.yaml --storage /tmp/tune/studies.journal > /tmp/f/tune.log 2>&1
echo "tune rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
tail -3 /tmp/f/tune.log
cp results/resnet50_bf16/tune.json /tmp/f/ 2>/dev/null
s=$(date +%s); timeout $(( 575 - ($(date +%s) - T0) )) python3 -m autoconv bench examples/resnet50_bf16.yaml --no-tune --out /tmp/f/results.json > /tmp/f/bench.log 2>&1
echo "bench rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
tail -5 /tmp/f/bench.log
cp /tmp/tune/cache.sqlite3 /tmp/f/; gzip -c /tmp/tune/studies.journal > /tmp/f/journal.gz
cd /tmp && tar czf $OUT/f.tgz f
