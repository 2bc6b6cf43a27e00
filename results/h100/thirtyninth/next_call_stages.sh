# Prepared in the thirty-ninth session, run in the fortieth at b9318a1 (../fortieth/README.md; the
# diff landed then, so it no longer applies to later trees). Was: the runner-up tiles'
# other stages in implicit_gemm_wgmma_tma (stages_runner_up.diff: runners_up.PARTNERS), against the
# tree. nvidia-h200 (one GPU, 16 cores), ~480 s. ResNet-50 b32 bf16 NHWC (examples/resnet50_bf16.yaml)
# from empty storage, winners', CuPy and CUDA caches: the tree (R) against the tree with the diff
# (S), order R S S R S R R S; the runs' winners re-timed side by side (compare_runs), each against
# the fastest of the call per layer (../thirtyeighth/per_layer.py); the journals counted
# (../thirtyeighth/split_polish.py, which the diff teaches the new origins).
#   bash results/h100/thirtyninth/next_call_stages.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
S=/tmp/tree_stages R_TREE=$PWD
mkdir -p $S && cp -r autoconv examples pyproject.toml search_spaces templates results $S/
(cd $S && git apply --include='autoconv/*' --include='results/*' $R_TREE/results/h100/thirtyninth/stages_runner_up.diff) \
  || { echo "the diff does not apply" | tee -a $R/times.txt; exit 1; }
grep -n "^PARTNERS" $R_TREE/autoconv/search/runners_up.py $S/autoconv/search/runners_up.py | tee -a $R/times.txt
CONFIG=examples/resnet50_bf16.yaml RUNS=()
run() {  # name tree: skipped where too little of the call's time is left for it and the comparison
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R $1 $2 $CONFIG - 70; RUNS+=($1)
}
run R_a $R_TREE; run S_a $S; run S_b $S; run R_b $R_TREE; run S_c $S; run R_c $R_TREE; run R_d $R_TREE; run S_d $S
compare_runs $R $CONFIG compare 90 "${RUNS[@]}"
python3 results/h100/thirtyeighth/per_layer.py $R/compare.json 1.04 > $R/per_layer.txt 2>&1
head -10 $R/per_layer.txt
python3 $S/results/h100/thirtyeighth/split_polish.py $R/journal_*.gz > $R/split_polish.txt 2>&1
cut -c1-300 $R/split_polish.txt
cd /tmp && tar czf $OUT/r.tgz r
