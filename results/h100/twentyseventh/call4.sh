# Twenty-seventh session, call 4 (nvidia-h100-x1): REUSE_W and the flat stores, end to end. The twenty
# awkward layers in bf16 and fp16 NHWC, and ResNet-50 at batch 32 in bf16, each tuned from empty and
# benchmarked against cuDNN's best plan in the same precision and layout (as the twenty-sixth session's
# call 1b and call 3 did before them).
#   bash results/h100/twentyseventh/call4.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
cd results/h100/twentysixth
tune_and_bench awkward_bf16 awkward_bf16.yaml /tmp/o 130 100
tune_and_bench awkward_fp16 awkward_fp16.yaml /tmp/o 130 100
cd ../../..
tune_and_bench resnet50_bf16 examples/resnet50_bf16.yaml /tmp/o 130 110
tar czf $OUT/call4.tgz -C /tmp/o .
