# Twenty-seventh session, call 3 (nvidia-h100-x1): this tree = HEAD + flat stores + REUSE_W (each stage's
# w box copied once where every tile spans all the filters and the stages hold whole rounds of the K tiles).
#   1. layer_probe.py time: MobileNetV2's expansion, HEAD's source (old) against this tree's (new), bf16;
#      the same layer in fp16 (the tuned winner was another family) and tf32 with the bf16 configuration;
#   2. family_sweep of the expansion (bf16) around its tuned configuration, with REUSE_W where it applies;
#   3. ab_epilogue.py on the three tuned configurations REUSE_W applies to (the expansion, ResNet-50's
#      layer1.0.conv1 and layer1.0.conv3, bf16), HEAD's sources against this tree's;
#   4. the TMA family's GPU tests.
#   bash results/h100/twentyseventh/call3.sh   (carry [".whl", ".probe/ab27"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
P=results/h100/twentyseventh/layer_probe.py
step() { echo "$1 rc=$2 at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; }
timeout 100 python3 $P time --old .probe/ab27/10.cu --out /tmp/o/expansion_bf16.json > /tmp/o/expansion_bf16.log 2>&1
step expansion_bf16 $?; tail -3 /tmp/o/expansion_bf16.log
for precision in fp16 tf32; do
  timeout 100 python3 $P time --spec "N=64,C=24,H=56,W=56,K=144,R=1,S=1,layout=NHWC,precision=$precision" \
    --out /tmp/o/expansion_$precision.json > /tmp/o/expansion_$precision.log 2>&1
  step expansion_$precision $?; tail -2 /tmp/o/expansion_$precision.log
done
timeout 200 python3 examples/family_sweep.py results/h100/twentysixth/awkward_bf16.yaml --family implicit_gemm_wgmma_tma \
  --layers mbv2_expand_1x1 --base results/h100/twentysixth/call1b/awkward_bf16/results.json \
  --configs '[{}, {"SCHEDULE": "pingpong"}, {"CONSUMERS": 1}, {"BN": 256}, {"BN": 128}, {"BN": 256, "CONSUMERS": 1, "STAGES": 3}, {"BN": 192, "CONSUMERS": 1, "STAGES": 3}]' \
  --out /tmp/o/sweep_expansion_bf16.json > /tmp/o/sweep_expansion_bf16.log 2>&1
step sweep_expansion_bf16 $?; tail -9 /tmp/o/sweep_expansion_bf16.log
timeout 120 python3 results/h100/twentysixth/ab_epilogue.py .probe/ab27/reuse.json /tmp/o/ab_reuse.json > /tmp/o/ab_reuse.log 2>&1
step ab_reuse $?; cat /tmp/o/ab_reuse.log | tail -6
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py > /tmp/o/gpu_tests.log 2>&1
step gpu_tests $?; tail -2 /tmp/o/gpu_tests.log
tar czf $OUT/call3.tgz -C /tmp/o .
