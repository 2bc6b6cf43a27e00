# Twenty-sixth session, call 5 (nvidia-h100-x1): x's boxes by a tiled map for 1x1 layers at stride 1
# (X_MAP tiled: x as the matrix [N*H*W][C]) against the im2col map, same configurations, one run each:
#   1. the TMA family's GPU check of every shape and switch value (the 1x1 shapes take both maps);
#   2. family_sweep, each layer's tuned configuration with either map: the awkward 1x1 layers in bf16
#      (call 1b's winners) and tf32 (call 4's), ResNet-50's 1x1 layers in bf16 (twenty-fourth session's).
#   bash results/h100/twentysixth/call5.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py -k "matches_reference_on_the_gpu" > /tmp/o/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -2 /tmp/o/gpu_tests.log
D=results/h100/twentysixth
AB='[{}, {"X_MAP": "tiled"}]'
ONE_BY_ONE=mbv2_expand_1x1,mbv2_project_1x1,effnet_head_1x1,n1_head_1x1
timeout 60 python3 examples/family_sweep.py $D/awkward_bf16.yaml --family implicit_gemm_wgmma_tma --layers $ONE_BY_ONE \
  --base $D/call1b/awkward_bf16/results.json --configs "$AB" --out /tmp/o/tiled_bf16.json > /tmp/o/tiled_bf16.log 2>&1
echo "awkward bf16 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/tiled_bf16.log
timeout 60 python3 examples/family_sweep.py $D/awkward_tf32.yaml --family implicit_gemm_wgmma_tma --layers $ONE_BY_ONE \
  --base $D/call4/awkward_tf32/results.json --configs "$AB" --out /tmp/o/tiled_tf32.json > /tmp/o/tiled_tf32.log 2>&1
echo "awkward tf32 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/tiled_tf32.log
timeout 80 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_tma --layers conv1,conv3 \
  --base results/h100/resnet50_n32_bf16/twentyfourth_session/results.json --configs "$AB" --out /tmp/o/tiled_rn50.json > /tmp/o/tiled_rn50.log 2>&1
echo "resnet50 bf16 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/tiled_rn50.log
tar czf $OUT/call5.tgz -C /tmp/o .
