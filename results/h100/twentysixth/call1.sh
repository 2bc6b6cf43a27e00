# Twenty-sixth session, call 1 (nvidia-h100-x1), part A:
#   1. b76aec5's fix of the faults-and-hangs GPU test (the twenty-fifth session's one GPU failure);
#   2. twenty awkward layers of networks outside the presets (awkward_layers.txt), fp32 NCHW and tf32 NHWC,
#      each tuned from empty and benchmarked against cuDNN's best plan in the same precision and layout.
#   bash results/h100/twentysixth/call1.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu.py -k faults_and_hangs > /tmp/o/faults_test.log 2>&1
echo "faults test rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -2 /tmp/o/faults_test.log
cd results/h100/twentysixth
tune_and_bench awkward_fp32 awkward_fp32.yaml /tmp/o 170 110
tune_and_bench awkward_tf32 awkward_tf32.yaml /tmp/o 130 100
tar czf $OUT/call1.tgz -C /tmp/o .
