# device call (fourteenth session): ResNet-50's stem in bf16, fp16 and tf32, our kernels against
# cuDNN's: CUDA-event times, then ncu's full set (raw) of one launch of each.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; ncu --version | tail -1; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 200 python3 results/h100/stem/stem_probe.py times > /tmp/r/times.log 2>&1
echo "times rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; cat /tmp/r/times.log | tail -12
timeout 300 ncu --clock-control none --profile-from-start off --set full --csv --page raw \
    python3 results/h100/stem/stem_probe.py ncu > /tmp/r/ncu_raw.csv 2> /tmp/r/ncu.err
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/ncu.err
python3 results/h100/ncu_limits/summarize.py /tmp/r/ncu_raw.csv > /tmp/r/summary.md 2>&1; cat /tmp/r/summary.md | cut -c1-250
cd /tmp && tar czf $OUT/r.tgz r
