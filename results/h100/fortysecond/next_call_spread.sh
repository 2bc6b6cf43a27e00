# Prepared in the forty-second session, NOT RUN unless a later README says so: how far apart one kernel
# times in one process (the comparison re-timed the same kernel up to 8.4% apart at batch 256, 4.6% at
# 32: README here). One GPU (any kind). ResNet-50 b256 and b32 tuned from empty; then each run's cache
# given four times to compare_caches.py (every layer's winner timed 4 x 5 times in turn, each verified
# and fully timed as the tuner times winners), with the GPU's clocks, power and throttle reasons
# sampled every 100 ms beside it; spread.py reads both. Everything lands in $OUT/r.tgz.
#   bash results/h100/fortysecond/next_call_spread.sh   (device tool: carry [".probe/s35/whl"]; ~200 s)
# Prediction: the spread of one kernel's medians stays under 2% at b32 and reaches 5-8% at b256, with
# the SM clock below its maximum (power or thermal) while b256's longest layers run.
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
REASONS=clocks_event_reasons.active  # (older drivers: clocks_throttle_reasons.active)
nvidia-smi --query-gpu=$REASONS --format=csv > /dev/null 2>&1 || REASONS=clocks_throttle_reasons.active
for batch in 256 32; do
  config=$PWD/results/h100/fortysecond/resnet50_b256.yaml; [ $batch = 32 ] && config=$PWD/examples/resnet50.yaml
  tune_run $R b$batch $PWD "$config" - 90 --gpus 0
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,$REASONS \
    --format=csv,noheader,nounits -lms 100 > $R/smi_b$batch.csv &
  smi=$!
  c=/tmp/t_b$batch/c.sqlite3
  timeout 120 python3 results/h100/twentyeighth/compare_caches.py "$config" $R/same_b$batch.json a=$c b=$c c=$c d=$c \
    > $R/same_b$batch.log 2>&1
  kill $smi
  python3 results/h100/fortysecond/spread.py $R/same_b$batch.json $R/smi_b$batch.csv | tee $R/spread_b$batch.txt
done
rm -f $R/journal_*.gz
cd /tmp && tar czf $OUT/r.tgz r
