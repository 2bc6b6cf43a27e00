# Twenty-sixth session, call 1 (nvidia-h100-x1), part B, on the same warm machine: the twenty awkward
# layers in bf16 and fp16 NHWC, each tuned from empty and benchmarked against cuDNN's best plan in the
# same precision and layout.
#   bash results/h100/twentysixth/call1b.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
cd results/h100/twentysixth
tune_and_bench awkward_bf16 awkward_bf16.yaml /tmp/o 130 100
tune_and_bench awkward_fp16 awkward_fp16.yaml /tmp/o 130 100
tar czf $OUT/call1b.tgz -C /tmp/o .
