# Fortieth session, call 2: the GPU tests on the landed tree, then the runner-up tiles' other stages'
# cost in TF32 NHWC (examples/resnet50_tf32_nhwc.yaml: implicit_gemm_wgmma_tma), from empty storage,
# winners', CuPy and CUDA caches: the tree (S) against it with no partners but the split (W:
# runners_up.PARTNERS = {}), order S W W S; winners re-timed side by side (compare_runs), each run
# against the call's fastest per layer (../thirtyeighth/per_layer.py); the journals counted.
#   bash results/h100/fortieth/call2.sh   (device tool, nvidia-h200: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider --ignore=tests/bench tests -x > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/gpu_tests.log
W=/tmp/tree_split_only S_TREE=$PWD
mkdir -p $W && cp -r autoconv examples pyproject.toml search_spaces templates $W/
sed -i 's/^PARTNERS: dict\[str, tuple\[str, ...\]\] = .*/PARTNERS: dict[str, tuple[str, ...]] = {}/' $W/autoconv/search/runners_up.py
grep -n "^PARTNERS" $S_TREE/autoconv/search/runners_up.py $W/autoconv/search/runners_up.py | tee -a $R/times.txt
CONFIG=examples/resnet50_tf32_nhwc.yaml RUNS=()
run() {  # name tree: skipped where too little of the call's time is left for it and the comparison
  if [ $(( $(date +%s) - T0 )) -gt 470 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R $1 $2 $CONFIG - 55; RUNS+=($1)
  cd /tmp && tar czf $OUT/r.tgz r; cd - > /dev/null  # (what is done so far, should the call be cut)
}
run S_a $S_TREE; run W_a $W; run W_b $W; run S_b $S_TREE
compare_runs $R $CONFIG compare 60 "${RUNS[@]}"
python3 results/h100/thirtyeighth/per_layer.py $R/compare.json 1.04 > $R/per_layer.txt 2>&1
head -12 $R/per_layer.txt
python3 results/h100/thirtyeighth/split_polish.py $R/journal_*.gz > $R/split_polish.txt 2>&1
cut -c1-300 $R/split_polish.txt
cd /tmp && tar czf $OUT/r.tgz r
