# Twenty-third session: ncu's full set on the bf16 layers cuDNN wins, ours and cuDNN's plan side by side
#   bash results/h100/ncu_bf16_losers/call1.sh   (carry [".whl"], nvidia-h100-x1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; ncu --version; git log -1 --format=%H; } > /tmp/r/env.txt 2>&1
timeout 400 ncu --clock-control none --profile-from-start off --set full --csv --page raw \
    python3 results/h100/ncu_bf16_losers/ncu_layers.py > /tmp/r/ncu_raw.csv 2> /tmp/r/ncu.err
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/ncu.err; wc -c /tmp/r/ncu_raw.csv
cd /tmp && tar czf $OUT/r.tgz r
