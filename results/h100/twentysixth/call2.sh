# Twenty-sixth session, call 2 (nvidia-h100-x1): two blocks per SM in the TMA family (BLOCKS_PER_SM 2) for
# the 1x1 layers whose tiles are mostly their stores (call 1: MobileNetV2's expansion from 24 channels
# at 0.57x cuDNN bf16).
#   1. the TMA family's GPU tests of two blocks per SM and of the runtime's launcher;
#   2. family_sweep on the awkward 1x1 layers, bf16 (call 1b's winners as the base) and tf32 (the
#      family's default as the base): one block against two;
#   3. ncu on the expansion layer: call 1's winner against two tiles with two blocks per SM.
#   bash results/h100/twentysixth/call2.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py -k "two_blocks or runtime_launcher" > /tmp/o/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -2 /tmp/o/gpu_tests.log
D=results/h100/twentysixth
TWO='"SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "BLOCKS_PER_SM": 2, "STAGES": 3'
CONFIGS="[{}, {$TWO, \"BN\": 64, \"CONSUMERS\": 1}, {$TWO, \"BN\": 64, \"CONSUMERS\": 2}, {$TWO, \"BN\": 128, \"CONSUMERS\": 1},
          {$TWO, \"BN\": 64, \"CONSUMERS\": 2, \"SCHEDULE\": \"pingpong\"}, {$TWO, \"BN\": 32, \"CONSUMERS\": 1}]"
LAYERS=mbv2_expand_1x1,mbv2_project_1x1,effnet_head_1x1,n1_head_1x1,densenet_3x3_k32
timeout 150 python3 examples/family_sweep.py $D/awkward_bf16.yaml --family implicit_gemm_wgmma_tma --layers $LAYERS \
  --base $D/call1b/awkward_bf16/results.json --configs "$CONFIGS" --out /tmp/o/sweep_bf16.json > /tmp/o/sweep_bf16.log 2>&1
echo "sweep bf16 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -12 /tmp/o/sweep_bf16.log
TWO_T=${TWO/staged/direct}
CONFIGS_T="[{}, {$TWO_T, \"BN\": 64, \"CONSUMERS\": 1}, {$TWO_T, \"BN\": 64, \"CONSUMERS\": 2}, {$TWO_T, \"BN\": 128, \"CONSUMERS\": 1},
            {$TWO, \"BN\": 64, \"CONSUMERS\": 1}, {$TWO_T, \"BN\": 32, \"CONSUMERS\": 1}]"
timeout 150 python3 examples/family_sweep.py $D/awkward_tf32.yaml --family implicit_gemm_wgmma_tma --layers $LAYERS \
  --configs "$CONFIGS_T" --out /tmp/o/sweep_tf32.json > /tmp/o/sweep_tf32.log 2>&1
echo "sweep tf32 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -12 /tmp/o/sweep_tf32.log
timeout 120 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy \
  --section WarpStateStats --section MemoryWorkloadAnalysis python3 $D/ncu_two_blocks.py > /tmp/o/ncu_two_blocks.txt 2>&1
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt
grep -E "Duration|DRAM Throughput|Achieved Occupancy|Memory Throughput" /tmp/o/ncu_two_blocks.txt | head -20
tar czf $OUT/call2.tgz -C /tmp/o .
