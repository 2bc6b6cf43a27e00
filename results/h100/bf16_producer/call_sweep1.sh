# device call (tenth session, H100): the producer warpgroup (COPIES producer) against the committed bf16 winners.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/w
T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD
L4='N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,precision=bf16,layout=NHWC'
for cfg in '{"BK": 64, "BM": 64, "BN": 128, "MIN_BLOCKS": 1, "MMA_PENDING": 1, "STAGES": 4, "WGN": 128, "SPLIT_K": 2, "SCHEDULE": "tiles", "COPIES": "producer"}' \
           '{"BK": 64, "BM": 128, "BN": 128, "MIN_BLOCKS": 1, "MMA_PENDING": 1, "STAGES": 4, "WGN": 128, "SPLIT_K": 1, "SCHEDULE": "tiles", "COPIES": "producer"}'; do
  timeout 30 python3 results/h100/bf16_stream_k/launch_one.py "$L4" "$cfg" 4 >> /tmp/w/first.log 2>&1; echo "first rc=$?" | tee -a /tmp/w/first.log
done
tail -4 /tmp/w/first.log
if grep -q "error" /tmp/w/first.log && ! grep -q "rc=124" /tmp/w/first.log; then
timeout 400 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_f16 \
  --base results/h100/resnet50_n32_bf16/results.json \
  --configs '[{}, {"COPIES": "producer"}, {"COPIES": "producer", "MIN_BLOCKS": 1}, {"COPIES": "producer", "STAGES": 6, "MIN_BLOCKS": 1}]' \
  --out /tmp/w/sweep.json > /tmp/w/sweep.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 ))s"; tail -8 /tmp/w/sweep.log
fi
cd /tmp && tar czf $OUT/w.tgz w
