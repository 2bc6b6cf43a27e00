# device call (twelfth session, H100): counters of the tile schedule and of stream-K on one layer
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r
timeout 200 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --metrics sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,lts__t_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    --csv --page details python3 results/h100/tma_stream_k/ncu_stream_k.py > /tmp/r/ncu_stream_k.csv 2> /tmp/r/ncu_stream_k.err
echo "ncu rc=$?"; tail -3 /tmp/r/ncu_stream_k.err
cd /tmp && tar czf $OUT/r.tgz r
