# Twenty-seventh session, call 6 (nvidia-h100-x1): 74776e8's bench change (a problem no family's
# configuration fits is named before tuning and under --no-tune) through the bench's GPU tests.
#   bash results/h100/twentyseventh/call6.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/bench > /tmp/o/bench_gpu_tests.log 2>&1
echo "bench gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/bench_gpu_tests.log
tar czf $OUT/call6.tgz -C /tmp/o .
