# Twenty-ninth session, call 5, one GPU: issue 16 target 2 again at facf9b0's code, cold caches only
# (the device budget's last ~5 minutes): ResNet-50 fp32 from empty (the history), then VGG-16 in the
# order trC1 plainC1 plainC2 trC2 (as call 3's C runs), then the winners re-timed side by side.
# Each result is written to $OUT as it comes (the budget may end the call).
#   bash results/h100/twentyninth/call5.sh   (device tool: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=$OUT/r; device_preamble $R
tune() {  # name history-dir [extra args]
  local name=$1 hist=$2; shift 2
  local t=/tmp/t_$name config=examples/vgg16.yaml; rm -rf $t; mkdir -p $t
  [ "$name" = rn50 ] && config=examples/resnet50.yaml
  [ -n "$hist" ] && cp $hist/c.sqlite3 $hist/s.journal $t/
  CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 100 python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  echo "tune $name rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep "tuning took" $R/tune_$name.log | cut -c1-200
  cp results/$( [ "$name" = rn50 ] && echo resnet50 || echo vgg16 )/tune.json $R/tune_$name.json 2>/dev/null
  gzip -f $R/tune_$name.log
}
tune rn50 ""
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal /tmp/hist/
tune trC1 /tmp/hist --transfer
tune plainC1 ""
tune plainC2 ""
tune trC2 /tmp/hist --transfer
timeout 40 python3 results/h100/twentyeighth/compare_caches.py examples/vgg16.yaml $R/compare.json \
  plainC1=/tmp/t_plainC1/c.sqlite3 plainC2=/tmp/t_plainC2/c.sqlite3 trC1=/tmp/t_trC1/c.sqlite3 \
  trC2=/tmp/t_trC2/c.sqlite3 > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -4 $R/compare.log
