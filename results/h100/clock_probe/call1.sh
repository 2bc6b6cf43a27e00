# Twenty-third session: SM clock and power while each side's calls run back-to-back (probe.py)
#   bash results/h100/clock_probe/call1.sh   (carry [".whl"], nvidia-h100-x1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; git log -1 --format=%H; } > $R/env.txt 2>&1
timeout 250 python3 results/h100/clock_probe/probe.py examples/resnet50_bf16.yaml \
  results/h100/twentysecond/call5/bf16/results.json $R/clock_bf16.json > $R/clock_bf16.log 2>&1
echo "bf16 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; cat $R/clock_bf16.log | tail -8
cat $R/env.txt
