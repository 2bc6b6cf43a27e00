# Thirty-sixth session, call 3, nvidia-h200 (one H200, 16 cores): `--transfer` (T) against the full
# search (P) in the 16-bit and TF32 precisions, from empty, at db45053: ResNet-50 b32 TF32
# (examples/resnet50_tf32.yaml) order T P P T, then bf16 NHWC (examples/resnet50_bf16.yaml) T P if
# time is left; each set's winners re-timed side by side (../twentyeighth/compare_caches.py).
#   bash results/h100/thirtysixth/call3.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
compare() {  # config name label...
  local config=$1 name=$2; shift 2
  local caches=""; for label in "$@"; do [ -f /tmp/t_$label/c.sqlite3 ] && caches="$caches $label=/tmp/t_$label/c.sqlite3"; done
  timeout 90 python3 results/h100/twentyeighth/compare_caches.py $config $R/compare_$name.json $caches > $R/compare_$name.log 2>&1
  echo "compare $name rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare_$name.log
}
TF=examples/resnet50_tf32.yaml BF=examples/resnet50_bf16.yaml
tune_run $R tf_T_a $PWD $TF - 120 --transfer
tune_run $R tf_P_a $PWD $TF - 120
tune_run $R tf_P_b $PWD $TF - 120
tune_run $R tf_T_b $PWD $TF - 120 --transfer
compare $TF tf32 tf_P_a tf_T_a tf_P_b tf_T_b
if [ $(( $(date +%s) - T0 )) -lt 300 ]; then
  tune_run $R bf_T_a $PWD $BF - 110 --transfer
  tune_run $R bf_P_a $PWD $BF - 110
  compare $BF bf16 bf_P_a bf_T_a
else echo "bf16 skipped" | tee -a $R/times.txt; fi
rm -f $R/journal_*.gz
cd /tmp && tar czf $OUT/r.tgz r
