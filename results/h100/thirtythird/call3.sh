# Thirty-third session, call 3 (nvidia-h200-x2: 2 H200s, 32 cores; the x4 kind was not lent): ResNet-50 from empty
# storage and caches with `--transfer` (its later studies transfer from its own first ones, once the
# model knows 8 problems) and without, two GPUs and one; order twoT oneT one two oneT twoT; host CPU
# every 0.5 s; then the winners of one, oneT_a, twoT_a, two re-timed side by side in one process.
#   bash results/h100/thirtythird/call3.sh   (device tool, nvidia-h200-x2: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
cpu_sampler() { while true; do echo "$(date +%s.%N) $(head -1 /proc/stat)"; sleep 0.5; done; }
tune() {  # name gpus [args]
  local name=$1 gpus=$2; shift 2
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$name; mkdir -p /tmp/t_$name; s=$(date +%s.%N)
  cpu_sampler > $R/cpu_$name.txt & SP=$!
  CUPY_CACHE_DIR=/tmp/t_$name/cupy CUDA_CACHE_PATH=/tmp/t_$name/cc timeout 80 python3 -m autoconv tune examples/resnet50.yaml --gpus $gpus --storage /tmp/t_$name/s.journal --cache /tmp/t_$name/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  rc=$?; kill $SP
  echo "tune $name rc=$rc start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$name.log | cut -c1-200
  cp results/resnet50/tune.json $R/tune_$name.json
}
tune twoT_a 0,1 --transfer; tune oneT_a 0 --transfer; tune one_a 0; tune two_a 0,1; tune oneT_b 0 --transfer; tune twoT_b 0,1 --transfer
caches=""; for n in one_a oneT_a twoT_a two_a oneT_b twoT_b; do [ -f /tmp/t_$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$n/c.sqlite3"; done
left=$(( 570 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && CUDA_VISIBLE_DEVICES=0 timeout $left python3 results/h100/twentyeighth/compare_caches.py examples/resnet50.yaml $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -8 $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
