# Twenty-third session: does cuDNN hide a fixed cost per kernel between back-to-back calls? (probe.py)
#   bash results/h100/pdl_probe/call1.sh   (carry [".whl"], nvidia-h100-x1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy;print(cupy.__version__)"; git log -1 --format=%H; } > $R/env.txt 2>&1
timeout 260 python3 results/h100/pdl_probe/probe.py examples/resnet50_bf16.yaml \
  results/h100/twentysecond/call5/bf16/results.json $R/probe_bf16.json > $R/probe_bf16.log 2>&1
echo "bf16 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -2 $R/probe_bf16.log
timeout 260 python3 results/h100/pdl_probe/probe.py examples/resnet50_tf32_nhwc.yaml \
  results/h100/twentysecond/call6/results.json $R/probe_tf32.json > $R/probe_tf32.log 2>&1
echo "tf32 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -2 $R/probe_tf32.log
