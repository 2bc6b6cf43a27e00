# Thirty-third session, call 4 (nvidia-h200-x2: 2 H200s, 32 cores): how busy each GPU's lock is
# (lock_sampler.py, every 5 ms) while ResNet-50 is tuned from empty storage and caches on one GPU and
# on two; order one two one two. The lock is held while a GPU worker prepares a problem's buffers
# (inputs and float64 reference), and verifies and times a candidate (also the winners' finals).
#   bash results/h100/thirtythird/call4.sh   (device tool, nvidia-h200-x2: carry [".whl"])
set -u
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
tune() {  # name gpus [args]
  local name=$1 gpus=$2; shift 2
  [ $(( $(date +%s) - T0 )) -gt 330 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$name; mkdir -p /tmp/t_$name
  python3 results/h100/thirtythird/lock_sampler.py $R/lock_$name.json & LP=$!
  CUPY_CACHE_DIR=/tmp/t_$name/cupy CUDA_CACHE_PATH=/tmp/t_$name/cc timeout 80 python3 -m autoconv tune examples/resnet50.yaml --gpus $gpus --storage /tmp/t_$name/s.journal --cache /tmp/t_$name/c.sqlite3 "$@" > $R/tune_$name.log 2>&1
  rc=$?; kill $LP; wait $LP
  echo "tune $name rc=$rc at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep "tuning took" $R/tune_$name.log | cut -c1-400
  cp results/resnet50/tune.json $R/tune_$name.json
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [print(k, round(v['held'],3), round(v['first_s'],1), round(v['last_s'],1)) for k,v in d.items()]" $R/lock_$name.json
}
tune one_a 0; tune two_a 0,1; tune one_b 0; tune two_b 0,1
cd /tmp && tar czf $OUT/r.tgz r
