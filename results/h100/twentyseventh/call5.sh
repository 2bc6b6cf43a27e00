# Twenty-seventh session, call 5 (nvidia-h100-x1): the whole GPU suite at 37b7c7f (REUSE_W and the flat stores).
#   bash results/h100/twentyseventh/call5.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
timeout 540 python3 -m pytest -q -p no:cacheprovider -m gpu tests > /tmp/o/gpu_suite.log 2>&1
echo "gpu suite rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -4 /tmp/o/gpu_suite.log
tar czf $OUT/call5.tgz -C /tmp/o .
