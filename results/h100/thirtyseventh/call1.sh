# Thirty-seventh session, call 1, nvidia-h200 (one H200, 16 cores): does the transfer default hold in
# bf16? ResNet-50 b32 bf16 NHWC (examples/resnet50_bf16.yaml) from empty storage, winners', CuPy and
# CUDA caches, tree 2e2ce69: the default (T, transfer) against `--no-transfer` (P, full studies), order
# T P P T; the four runs' winners re-timed side by side (../twentyeighth/compare_caches.py).
#   bash results/h100/thirtyseventh/call1.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
BF=examples/resnet50_bf16.yaml
run() {  # name [args]: skipped where too little of the call's 600 s is left for it and the comparison
  if [ $(( $(date +%s) - T0 )) -gt 380 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R "$@"
}
run bf_T_a $PWD $BF - 110
run bf_P_a $PWD $BF - 110 --no-transfer
run bf_P_b $PWD $BF - 110 --no-transfer
run bf_T_b $PWD $BF - 110
caches=""; for label in bf_P_a bf_T_a bf_P_b bf_T_b; do
  [ -f /tmp/t_$label/c.sqlite3 ] && caches="$caches $label=/tmp/t_$label/c.sqlite3"; done
timeout 100 python3 results/h100/twentyeighth/compare_caches.py $BF $R/compare_bf16.json $caches > $R/compare_bf16.log 2>&1
echo "compare bf16 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare_bf16.log
cd /tmp && tar czf $OUT/r.tgz r
