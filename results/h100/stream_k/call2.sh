# Twenty-fourth session, call 2 (nvidia-h100-x1): ncu on stream-K against the tuned configuration
#   bash results/h100/stream_k/call2.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; ncu --version; } > /tmp/r/env.txt 2>&1
timeout 300 ncu --clock-control none --profile-from-start off --set full --csv --page raw \
    python3 results/h100/stream_k/ncu_stream_k.py > /tmp/r/ncu_raw.csv 2> /tmp/r/ncu.err
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/ncu.err; wc -c /tmp/r/ncu_raw.csv
cd /tmp && tar czf $OUT/r.tgz r
