# Twenty-sixth session, call 3 (nvidia-h100-x1): the TMA family's staged stores in batches (each thread
# reads 8 vectors into registers of their own, then stores them) and two blocks per SM (BLOCKS_PER_SM).
#   1. the TMA family's GPU tests;
#   2. A/B of the staged epilogue, this tree's against the previous template's source (.probe/ab/), on the
#      bf16 winners of ResNet-50 (twenty-fourth session) and of the awkward layers (call 1b), in one process;
#   3. the awkward layers in bf16 and ResNet-50 in bf16, tuned from empty and benchmarked.
#   bash results/h100/twentysixth/call3.sh   (carry [".whl", ".probe/ab"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py > /tmp/o/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -2 /tmp/o/gpu_tests.log
timeout 200 python3 results/h100/twentysixth/ab_epilogue.py .probe/ab/cases.json /tmp/o/ab_epilogue.json > /tmp/o/ab_epilogue.log 2>&1
echo "ab rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -4 /tmp/o/ab_epilogue.log
cd results/h100/twentysixth
tune_and_bench awkward_bf16 awkward_bf16.yaml /tmp/o 110 90
cd ../../..
tune_and_bench resnet50_bf16 examples/resnet50_bf16.yaml /tmp/o 120 100
tar czf $OUT/call3.tgz -C /tmp/o .
