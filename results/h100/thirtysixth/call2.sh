# Thirty-sixth session, call 2, nvidia-h200 (one H200, 16 cores): ResNet-50 b32 FP32 from empty with
# `--transfer` (T) and the full search (P), order T P P T, at 284113a (the per-parameter polish);
# the four runs' winners re-timed side by side (../twentyeighth/compare_caches.py), relative to the
# first P; then the GPU tests, if the call has time left. Everything lands in $OUT/r.tgz.
#   bash results/h100/thirtysixth/call2.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
RN=examples/resnet50.yaml
tune_run $R T_a $PWD $RN - 110 --transfer
tune_run $R P_a $PWD $RN - 110
tune_run $R P_b $PWD $RN - 110
tune_run $R T_b $PWD $RN - 110 --transfer
timeout 90 python3 results/h100/twentyeighth/compare_caches.py $RN $R/compare.json \
  P_a=/tmp/t_P_a/c.sqlite3 T_a=/tmp/t_T_a/c.sqlite3 P_b=/tmp/t_P_b/c.sqlite3 T_b=/tmp/t_T_b/c.sqlite3 > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare.log
left=$(( 560 - ($(date +%s) - T0) ))
if [ $left -gt 240 ]; then
  timeout $left python3 -m pytest -m gpu -q -p no:cacheprovider --ignore=tests/bench tests > $R/gpu_tests.log 2>&1
  echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/gpu_tests.log
else echo "gpu tests skipped: $left s left" | tee -a $R/times.txt; fi
cd /tmp && tar czf $OUT/r.tgz r
