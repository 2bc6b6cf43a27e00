set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/n; export PYTHONPATH=/tmp/site:$PWD
L='N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,precision=bf16,layout=NHWC'
B='"BK": 64, "BM": 64, "BN": 128, "MIN_BLOCKS": 1, "MMA_PENDING": 1, "SPLIT_K": 1, "STAGES": 4, "WGN": 128, "SCHEDULE": "tiles"'
i=0
for c in all_threads producer; do i=$((i+1))
  timeout 90 ncu --kernel-name regex:'SCHEDULE.*[0-9a-f]$' --launch-skip 2 --launch-count 1 --set detailed --print-details all \
    python3 results/h100/bf16_stream_k/launch_one.py "$L" "{$B, \"COPIES\": \"$c\"}" > /tmp/n/ncu_$c.txt 2>&1; echo "$c rc=$?"
done
cd /tmp && tar czf $OUT/n.tgz n
