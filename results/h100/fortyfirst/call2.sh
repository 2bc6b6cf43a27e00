# Ran on 87fff01's tree plus compiler_niceness.diff (not landed: see README). The compilers at a lower
# CPU priority than the tuners (autoconv.gpu.compiler.COMPILER_NICENESS):
# N (the tree: niceness 10) against P (niceness 0, as before), ResNet-50 b32 FP32 (examples/resnet50.yaml,
# the issue's config) from empty storage, winners', CuPy and CUDA caches, order N P P N P N; winners
# re-timed side by side (compare_and_count); each run's phases per candidate (phases.py).
#   bash results/h100/fortyfirst/call2.sh   (device tool, nvidia-h200: carry [".probe/s35/whl"])
# Prediction (README, NOTES): full studies' ask ~35 -> 10-20 ms a candidate, their wall per problem
# -15-30%, the run's wall -8-20%; compile CPU-s and candidates within the runs' spread; winners alike.
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
CONFIG=examples/resnet50.yaml
N_TREE=$PWD P=/tmp/tree_niceness0
variant_tree $P autoconv/gpu/compiler.py 's/^COMPILER_NICENESS = 10$/COMPILER_NICENESS = 0/' || exit 1
RUNS=()
run() { tune_in_turn 400 $R "$1" "$2" $CONFIG - 90; }  # name tree
run N_a $N_TREE; run P_a $P; run P_b $P; run N_b $N_TREE; run P_c $P; run N_c $N_TREE
python3 results/h100/fortyfirst/phases.py $(for r in "${RUNS[@]}"; do echo $R/tune_$r.json; done) | tee $R/phases.txt
compare_and_count $R $CONFIG 90 "${RUNS[@]}"
rm -f $R/journal_*.gz
cd /tmp && tar czf $OUT/r.tgz r
