# Thirty-ninth session, call 1: how often a ResNet-50 tune from empty loses a layer with both split-K
# steps (transfer.EVERY_CHOICE and the runner-up tiles' splits, autoconv/search/runners_up.py).
# nvidia-h200 (one GPU, 16 cores), ~550 s. ResNet-50 b32 FP32 from empty storage, winners', CuPy and
# CUDA caches, the tree as committed, eleven runs one after another; their winners re-timed side by
# side (compare_runs), each against the fastest of the eleven per layer (per_layer.py).
#   bash results/h100/thirtyninth/call1.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
grep -n -E "^(EVERY_CHOICE|RUNNER_UP_TILES|RUNNER_UP_MARGIN)" autoconv/search/transfer.py autoconv/search/runners_up.py | tee -a $R/times.txt
RN=examples/resnet50.yaml
RUNS=()
for n in 01 02 03 04 05 06 07 08 09 10 11; do
  # each run ~40 s; leave the comparison ~110 s of the call's 600
  if [ $(( $(date +%s) - T0 )) -gt 430 ]; then echo "skip D_$n" | tee -a $R/times.txt; continue; fi
  tune_run $R D_$n $PWD $RN - 80; RUNS+=(D_$n)
done
compare_runs $R $RN compare 130 "${RUNS[@]}"
python3 results/h100/thirtyeighth/per_layer.py $R/compare.json 1.04 > $R/per_layer.txt 2>&1
head -14 $R/per_layer.txt
python3 results/h100/thirtyeighth/split_polish.py $R/journal_*.gz > $R/split_polish.txt 2>&1
cd /tmp && tar czf $OUT/r.tgz r
