# device call 3 (fourteenth session): the GPU tests of the TMA family and the runtime launcher
# (verify_runner's stream fix, PAD_PITCH), then the stem's candidates with x' pixels of 16, 64
# and 128 bytes: CUDA-event times, and ncu's duration and TMA bytes per kernel.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; ncu --version | tail -1; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 250 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_tma_family.py tests/runtime > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/gpu_tests.log
timeout 150 python3 results/h100/stem/stem_probe.py times > /tmp/r/times.log 2>&1
echo "times rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; cat /tmp/r/times.log | tail -22
timeout 150 ncu --clock-control none --profile-from-start off --csv \
    --metrics gpu__time_duration.sum,l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum,l1tex__m_xbar2l1tex_read_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum \
    python3 results/h100/stem/stem_probe.py ncu > /tmp/r/ncu_metrics.csv 2> /tmp/r/ncu.err
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -2 /tmp/r/ncu.err
cd /tmp && tar czf $OUT/r.tgz r
