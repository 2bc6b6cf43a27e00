# device call 2 (ninth session, H100): ResNet-50 fp32 from empty with 269b670 (patience restarts on > 2% only,
# preset patience 40) and with 27dbdc0 (.probe/old) in one call; VGG-16 with/without the new run's history in both orders.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/f
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/f/env.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
CUDA_CACHE_PATH=/tmp/warmcc timeout 60 python3 -m autoconv tune results/h100/tuning_cost/warm.yaml --storage /tmp/warm.journal --cache /tmp/warm.sqlite3 > /tmp/f/warm.log 2>&1; echo "warm rc=$? $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
run() {  # name root config history-cache
  rm -rf /tmp/r_$1; mkdir -p /tmp/r_$1
  [ -n "$4" ] && cp $4 /tmp/r_$1/cache.sqlite3
  s=$(date +%s); (cd $2 && CUDA_CACHE_PATH=/tmp/r_$1/cc PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m autoconv tune $3 --storage /tmp/r_$1/studies.journal --cache /tmp/r_$1/cache.sqlite3 > /tmp/f/tune_$1.log 2>&1); echo "$1 rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
  for d in $2/results/resnet50 $2/results/vgg16; do [ -f $d/tune.json ] && mv $d/tune.json /tmp/f/tune_$1.json; done
  cp /tmp/r_$1/cache.sqlite3 /tmp/f/cache_$1.sqlite3; gzip -c /tmp/r_$1/studies.journal > /tmp/f/journal_$1.gz
  grep "tuning took" /tmp/f/tune_$1.log
}
run rn50_new . examples/resnet50.yaml ""
run rn50_old .probe/old examples/resnet50.yaml ""
run vgg_hist1 . examples/vgg16.yaml /tmp/r_rn50_new/cache.sqlite3
run vgg_plain1 . examples/vgg16.yaml ""
run vgg_plain2 . examples/vgg16.yaml ""
run vgg_hist2 . examples/vgg16.yaml /tmp/r_rn50_new/cache.sqlite3
for n in rn50_new rn50_old; do timeout 100 python3 results/h100/tuning_cost/screening/compare_winners.py examples/resnet50.yaml results/h100/resnet50_n32/results.json /tmp/r_$n/cache.sqlite3 /tmp/f/compare_$n.json > /tmp/f/compare_$n.log 2>&1; echo "compare $n rc=$?"; tail -1 /tmp/f/compare_$n.log; done
if [ $(( $(date +%s) - T0 )) -lt 470 ]; then run rn50_new2 . examples/resnet50.yaml ""; fi
cd /tmp && tar czf $OUT/f.tgz f
