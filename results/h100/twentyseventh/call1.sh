# Twenty-seventh session, call 1 (nvidia-h100-x1), this tree with flat_stores.diff applied
# (results/h100/twentysixth/): MobileNetV2's 1x1 expansion and the flat stores, tf32 ssd300 beside cuDNN.
#   1. layer_probe.py time: the expansion's kernel before and after the flat stores, plain store kernels
#      writing the same y, cuDNN through PyTorch;
#   2. ab_epilogue.py: the 28 tuned configurations whose source the flat stores change (awkward bf16 and
#      fp16 of call 1b, ResNet-50 bf16 of the twenty-fifth session's call 5), old/new in one process;
#   3. the TMA family's GPU tests with the flat stores;
#   4. ncu: details of every kernel of (1); SASS-level stall samples of the expansion, old and new;
#      details of tf32 ssd300_3x3's tuned kernel (call 4) and cuDNN's.
#   bash results/h100/twentyseventh/call1.sh   (carry [".whl", ".probe/ab27"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
P=results/h100/twentyseventh/layer_probe.py
OLD=.probe/ab27/10.cu
step() { echo "$1 rc=$2 at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; }
timeout 120 python3 $P time --old $OLD --stores --out /tmp/o/expansion_time.json > /tmp/o/expansion_time.log 2>&1
step expansion_time $?; cat /tmp/o/expansion_time.log | tail -8
timeout 240 python3 results/h100/twentysixth/ab_epilogue.py .probe/ab27/changed.json /tmp/o/ab_flat.json > /tmp/o/ab_flat.log 2>&1
step ab_flat $?; tail -4 /tmp/o/ab_flat.log
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py > /tmp/o/gpu_tests.log 2>&1
step gpu_tests $?; tail -2 /tmp/o/gpu_tests.log
NCU="ncu --clock-control none --profile-from-start off"
timeout 150 $NCU --set full --csv --page details python3 $P ncu --old $OLD --stores > /tmp/o/ncu_expansion_details.csv 2> /tmp/o/ncu_expansion_details.err
step ncu_details $?
timeout 150 $NCU --set full --import-source yes --page source --print-source sass --csv --kernel-name regex:implicit --launch-count 2 \
  python3 $P ncu --old $OLD > /tmp/o/ncu_expansion_sass.csv 2> /tmp/o/ncu_expansion_sass.err
step ncu_sass $?
SSD="N=4,C=64,H=300,W=300,K=64,R=3,S=3,stride=1,pad=1,dilation=1,layout=NHWC,precision=tf32"
SSD_CONFIG='{"BN": 64, "CONSUMERS": 3, "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16, "SCHEDULE": "cooperative", "SPLIT_K": 1, "STAGES": 4}'
timeout 150 $NCU --set full --csv --page details python3 $P ncu --spec "$SSD" --config "$SSD_CONFIG" > /tmp/o/ncu_ssd300_tf32.csv 2> /tmp/o/ncu_ssd300_tf32.err
step ncu_ssd300 $?
gzip -f /tmp/o/*.csv
tar czf $OUT/call1.tgz -C /tmp/o .
