# Thirty-eighth session, call 3: what the runner-up tiles' splits (autoconv/search/runners_up.py) cost
# and find. nvidia-h200 (one GPU, 16 cores), ~400 s. ResNet-50 b32 FP32 from empty storage, winners',
# CuPy and CUDA caches: the tree (R) against the tree with RUNNER_UP_TILES = 0 (H: the code before),
# order H R R H H R; the runs' winners re-timed side by side (compare_runs), each against the fastest
# of the six per layer (per_layer.py); the journals counted (split_polish.py).
#   bash results/h100/thirtyeighth/call3.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
H=/tmp/tree_without R_TREE=$PWD
mkdir -p $H && cp -r autoconv examples pyproject.toml search_spaces templates $H/
sed -i 's/^RUNNER_UP_TILES = .*/RUNNER_UP_TILES = 0/' $H/autoconv/search/runners_up.py
grep -n "^RUNNER_UP_TILES" $R_TREE/autoconv/search/runners_up.py $H/autoconv/search/runners_up.py | tee -a $R/times.txt
RN=examples/resnet50.yaml
RUNS=()
run() {  # name tree: skipped where too little of the call's time is left for it and the comparison
  if [ $(( $(date +%s) - T0 )) -gt 400 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R $1 $2 $RN - 80; RUNS+=($1)
}
run H_a $H; run R_a $R_TREE; run R_b $R_TREE; run H_b $H; run H_c $H; run R_c $R_TREE
compare_runs $R $RN compare 110 "${RUNS[@]}"
python3 results/h100/thirtyeighth/per_layer.py $R/compare.json 1.04 > $R/per_layer.txt 2>&1
head -8 $R/per_layer.txt
python3 results/h100/thirtyeighth/split_polish.py $R/journal_*.gz > $R/split_polish.txt 2>&1
cut -c1-400 $R/split_polish.txt
cd /tmp && tar czf $OUT/r.tgz r
