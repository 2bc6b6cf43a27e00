# Thirty-ninth session, call 3: the GPU tests, then what the runner-up tiles' splits cost and find in
# implicit_gemm_wgmma_tma, where tiles are now told apart by their output grid (GRID_M x GRID_N; the
# family has no BM, so before this the step did nothing there: 0 runner-up splits in call 2's bf16 run).
# nvidia-h200 (one GPU, 16 cores), ~560 s. ResNet-50 b32 from empty storage, winners', CuPy and CUDA
# caches, examples/resnet50_bf16.yaml (NHWC, both 16-bit families) then examples/resnet50_tf32_nhwc.yaml
# (implicit_gemm_wgmma_tma alone): the tree (R) against the tree with RUNNER_UP_TILES = 0 (H), order
# H R R H each; each config's runs' winners re-timed side by side (compare_runs), each against the
# fastest of its runs per layer (per_layer.py); the journals counted (split_polish.py).
#   bash results/h100/thirtyninth/call3.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider --ignore=tests/bench tests -x > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/gpu_tests.log
H=/tmp/tree_without R_TREE=$PWD
mkdir -p $H && cp -r autoconv examples pyproject.toml search_spaces templates $H/
sed -i 's/^RUNNER_UP_TILES = .*/RUNNER_UP_TILES = 0/' $H/autoconv/search/runners_up.py
grep -n "^RUNNER_UP_TILES" $R_TREE/autoconv/search/runners_up.py $H/autoconv/search/runners_up.py | tee -a $R/times.txt
run() {  # name tree config latest_start_s: skipped where too little of the call's time is left
  if [ $(( $(date +%s) - T0 )) -gt $4 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R $1 $2 $3 - 70; RUNS+=($1)
}
for precision in bf16 tf32_nhwc; do
  CONFIG=examples/resnet50_$precision.yaml RUNS=()
  [ $precision = bf16 ] && LATEST=400 || LATEST=490
  run H_${precision}_a $H $CONFIG $LATEST; run R_${precision}_a $R_TREE $CONFIG $LATEST
  run R_${precision}_b $R_TREE $CONFIG $LATEST; run H_${precision}_b $H $CONFIG $LATEST
  [ ${#RUNS[@]} -gt 1 ] || continue
  compare_runs $R $CONFIG compare_$precision 45 "${RUNS[@]}"
  python3 results/h100/thirtyeighth/per_layer.py $R/compare_$precision.json 1.04 > $R/per_layer_$precision.txt 2>&1
  head -6 $R/per_layer_$precision.txt
done
python3 results/h100/thirtyeighth/split_polish.py $R/journal_*.gz > $R/split_polish.txt 2>&1
cut -c1-300 $R/split_polish.txt
cd /tmp && tar czf $OUT/r.tgz r
