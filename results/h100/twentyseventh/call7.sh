# Twenty-seventh session, call 7 (nvidia-h100-x1), 87ba2e4: ncu of the expansion's kernel with REUSE_W
# (the tuned bf16 configuration of call 4's run, one consumer, and cc3fdf5's two-consumer one), for the
# next step: is the TMA still the wait, or the stores?
#   bash results/h100/twentyseventh/call7.sh   (carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
device_preamble /tmp/o
P=results/h100/twentyseventh/layer_probe.py
NCU="ncu --clock-control none --profile-from-start off --set full"
C1='{"BN": 192, "CONSUMERS": 1, "STAGES": 3, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16}'
timeout 100 $NCU --import-source yes --page source --print-source sass --csv --kernel-name regex:implicit \
  python3 $P ncu --config "$C1" > /tmp/o/ncu_c1_sass.csv 2> /tmp/o/ncu_c1_sass.err
echo "ncu c1 sass rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt
timeout 100 $NCU --csv --page details --kernel-name regex:implicit python3 $P ncu > /tmp/o/ncu_c2_details.csv 2> /tmp/o/ncu_c2_details.err
echo "ncu c2 details rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt
gzip -f /tmp/o/*.csv
tar czf $OUT/call7.tgz -C /tmp/o .
