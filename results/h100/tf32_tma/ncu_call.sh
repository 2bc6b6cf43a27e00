# device call (twelfth session, H100): hardware counters of the TMA family's tuned kernels and of
# cuDNN's (through F.conv2d) on five ResNet-50 layers (ncu_layers.py): speed of light, memory and
# compute workload, warp states.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r; T0=$(date +%s)
ncu --version > /tmp/r/env.txt 2>&1
timeout 400 ncu --clock-control none --profile-from-start off \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section LaunchStats --section Occupancy --csv --page details \
    python3 results/h100/tf32_tma/ncu_layers.py > /tmp/r/ncu.csv 2> /tmp/r/ncu.err
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/ncu.err; wc -l /tmp/r/ncu.csv
timeout 150 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum,lts__t_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum \
    --csv python3 results/h100/tf32_tma/ncu_layers.py > /tmp/r/ncu_metrics.csv 2> /tmp/r/ncu_metrics.err
echo "ncu metrics rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -3 /tmp/r/ncu_metrics.err
cd /tmp && tar czf $OUT/r.tgz r
