# device call (thirteenth session): every counter of ncu's full set, raw, for the TMA family's tuned
# kernels and cuDNN's (through F.conv2d) on the five ResNet-50 layers of ../tf32_tma/ncu_layers.py:
# the tensor pipe's utilization, shared-memory bandwidth and the warps' stall reasons side by side.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; ncu --version; } > /tmp/r/env.txt 2>&1
ncu --query-metrics 2>/dev/null | grep -iE "gmma|tensor_op|pipe_shared|shared_op" > /tmp/r/metric_names.txt
timeout 450 ncu --clock-control none --profile-from-start off --set full --csv --page raw \
    python3 results/h100/tf32_tma/ncu_layers.py > /tmp/r/ncu_raw.csv 2> /tmp/r/ncu.err
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/ncu.err; wc -c /tmp/r/ncu_raw.csv
cd /tmp && tar czf $OUT/r.tgz r
