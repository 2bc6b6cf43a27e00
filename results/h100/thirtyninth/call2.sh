# Thirty-ninth session, call 2: what the runner-up tiles' splits (autoconv/search/runners_up.py) cost
# and find in TF32 and in bf16 (call 3 of the thirty-eighth session measured FP32 only).
# nvidia-h200 (one GPU, 16 cores), ~520 s. ResNet-50 b32 from empty storage, winners', CuPy and CUDA
# caches, examples/resnet50_tf32.yaml then examples/resnet50_bf16.yaml (NHWC): the tree (R) against
# the tree with RUNNER_UP_TILES = 0 (H: the code before), order H R R H for each; each config's runs'
# winners re-timed side by side (compare_runs), each against the fastest of its four per layer
# (per_layer.py); the journals counted (split_polish.py).
#   bash results/h100/thirtyninth/call2.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
H=/tmp/tree_without R_TREE=$PWD
mkdir -p $H && cp -r autoconv examples pyproject.toml search_spaces templates $H/
sed -i 's/^RUNNER_UP_TILES = .*/RUNNER_UP_TILES = 0/' $H/autoconv/search/runners_up.py
grep -n "^RUNNER_UP_TILES" $R_TREE/autoconv/search/runners_up.py $H/autoconv/search/runners_up.py | tee -a $R/times.txt
run() {  # name tree config: skipped where too little of the call's time is left for it and the comparisons
  if [ $(( $(date +%s) - T0 )) -gt 360 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R $1 $2 $3 - 80; RUNS+=($1)
}
for precision in tf32 bf16; do
  CONFIG=examples/resnet50_$precision.yaml RUNS=()
  run H_${precision}_a $H $CONFIG; run R_${precision}_a $R_TREE $CONFIG
  run R_${precision}_b $R_TREE $CONFIG; run H_${precision}_b $H $CONFIG
  compare_runs $R $CONFIG compare_$precision 75 "${RUNS[@]}"
  python3 results/h100/thirtyeighth/per_layer.py $R/compare_$precision.json 1.04 > $R/per_layer_$precision.txt 2>&1
  head -6 $R/per_layer_$precision.txt
done
python3 results/h100/thirtyeighth/split_polish.py $R/journal_*.gz > $R/split_polish.txt 2>&1
cut -c1-400 $R/split_polish.txt
cd /tmp && tar czf $OUT/r.tgz r
