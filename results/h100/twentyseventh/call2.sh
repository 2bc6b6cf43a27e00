# Twenty-seventh session, call 2 (nvidia-h100-x1): this tree with flat_stores.diff applied and the TMA
# space's cap on stages (STAGES <= K_TILES + 2) lifted, for this experiment only: do more stages than a
# tile's K tiles pay where the epilogue is long (the producer runs into the next tiles)? family_sweep of
# each layer's tuned configuration (the twenty-sixth session's call 1b for the awkward layers, the
# twenty-fifth session's call 5 for ResNet-50) with more stages, and other schedules.
#   bash results/h100/twentyseventh/call2.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
step() { echo "$1 rc=$2 at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; }
S=examples/family_sweep.py
timeout 200 python3 $S results/h100/twentysixth/awkward_bf16.yaml --family implicit_gemm_wgmma_tma \
  --layers mbv2_expand_1x1 --base results/h100/twentysixth/call1b/awkward_bf16/results.json \
  --configs '[{}, {"STAGES": 4}, {"SCHEDULE": "pingpong"}, {"SCHEDULE": "pingpong", "STAGES": 4}, {"SCHEDULE": "pingpong", "STAGES": 5}, {"CONSUMERS": 1, "STAGES": 4}, {"CONSUMERS": 1, "STAGES": 6}, {"BN": 128, "STAGES": 4}, {"BN": 128, "STAGES": 6}, {"BN": 128, "SCHEDULE": "pingpong", "STAGES": 6}, {"BN": 256, "STAGES": 3}, {"BN": 256, "CONSUMERS": 1, "STAGES": 5}]' \
  --out /tmp/o/sweep_expansion_bf16.json > /tmp/o/sweep_expansion_bf16.log 2>&1
step sweep_expansion_bf16 $?; tail -16 /tmp/o/sweep_expansion_bf16.log
timeout 200 python3 $S examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_tma \
  --layers layer1.0.conv1,layer1.0.conv3 --base results/h100/twentyfifth/call5/bf16/results.json \
  --configs '[{}, {"STAGES": 4}, {"STAGES": 5}, {"STAGES": 6}, {"SCHEDULE": "pingpong", "STAGES": 5}]' \
  --out /tmp/o/sweep_resnet50_bf16.json > /tmp/o/sweep_resnet50_bf16.log 2>&1
step sweep_resnet50_bf16 $?; tail -9 /tmp/o/sweep_resnet50_bf16.log
tar czf $OUT/call2.tgz -C /tmp/o .
