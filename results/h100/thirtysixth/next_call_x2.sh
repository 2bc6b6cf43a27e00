# Prepared in the thirty-sixth session, NOT RUN (no two-GPU kind was lent): issue 16's target 4 with
# transfer the default. nvidia-h200-x2 (2 H200s, 32 cores). ResNet-50 b32 FP32 from empty storage,
# winners', CuPy and CUDA caches: the default (transfer) on one GPU and on two, order one two two one;
# then `--no-transfer`, order two one one two; the default runs' winners re-timed side by side
# (../twentyeighth/compare_caches.py). Everything lands in $OUT/r.tgz.
#   bash results/h100/thirtysixth/next_call_x2.sh   (device tool, kind nvidia-h200-x2: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
RN=examples/resnet50.yaml
run() {  # name gpus [args]
  local name=$1 gpus=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then echo "skip $name" | tee -a $R/times.txt; return; fi
  tune_run $R $name $PWD $RN - 100 --gpus $gpus "$@"
}
run T_one_a 0; run T_two_a 0,1; run T_two_b 0,1; run T_one_b 0
run P_two_a 0,1 --no-transfer; run P_one_a 0 --no-transfer; run P_one_b 0 --no-transfer; run P_two_b 0,1 --no-transfer
compare_runs $R $RN compare 90 T_one_a T_two_a T_two_b T_one_b
rm -f $R/journal_*.gz
cd /tmp && tar czf $OUT/r.tgz r
