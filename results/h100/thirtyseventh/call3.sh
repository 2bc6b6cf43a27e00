# Thirty-seventh session, call 3, nvidia-h200 (one H200, 16 cores): workers per GPU, now that transfer is
# the default. The default (fleet.default_workers_per_gpu: a worker per 5 cores, so 3 here) was set
# with full studies, which kept the compilers busy; a transfer run leaves them about half idle (call 1).
# ResNet-50 b32 from empty storage, winners', CuPy and CUDA caches, the default (W3) against
# `--workers-per-gpu 5` (W5), order W3 W5 W5 W3: FP32 (examples/resnet50.yaml), then bf16 NHWC
# (examples/resnet50_bf16.yaml) while time is left; each set's winners re-timed side by side.
#   bash results/h100/thirtyseventh/call3.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
run() {  # name config [args]: skipped where too little of the call's 600 s is left for it
  if [ $(( $(date +%s) - T0 )) -gt 430 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  local name=$1 config=$2; shift 2
  tune_run $R $name $PWD $config - 100 "$@"
}
compare() {  # config name label...
  local config=$1 name=$2; shift 2
  local caches=""; for label in "$@"; do [ -f /tmp/t_$label/c.sqlite3 ] && caches="$caches $label=/tmp/t_$label/c.sqlite3"; done
  timeout 60 python3 results/h100/twentyeighth/compare_caches.py $config $R/compare_$name.json $caches > $R/compare_$name.log 2>&1
  echo "compare $name rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare_$name.log
}
RN=examples/resnet50.yaml BF=examples/resnet50_bf16.yaml
run W3_a $RN; run W5_a $RN --workers-per-gpu 5; run W5_b $RN --workers-per-gpu 5; run W3_b $RN
compare $RN fp32 W3_a W5_a W5_b W3_b
run bf_W3_a $BF; run bf_W5_a $BF --workers-per-gpu 5; run bf_W5_b $BF --workers-per-gpu 5; run bf_W3_b $BF
[ $(( $(date +%s) - T0 )) -lt 540 ] && compare $BF bf16 bf_W3_a bf_W5_a bf_W5_b bf_W3_b
rm -f $R/journal_*.gz
cd /tmp && tar czf $OUT/r.tgz r
