# Twenty-sixth session, call 4 (nvidia-h100-x1): the whole GPU suite at this tree (the TMA family folds
# the filter into x's copy for strides over 8: FOLD_FILTER), then the awkward layers in tf32 NHWC tuned
# from empty and benchmarked (call 1 had no tf32 figure: the ViT patch embedding had no kernel).
#   bash results/h100/twentysixth/call4.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
timeout 370 python3 -m pytest -q -p no:cacheprovider -m gpu tests > /tmp/o/gpu_suite.log 2>&1
echo "gpu suite rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/gpu_suite.log
cd results/h100/twentysixth
tune_and_bench awkward_tf32 awkward_tf32.yaml /tmp/o 90 90
tar czf $OUT/call4.tgz -C /tmp/o .
