# A full study becomes a transfer study as soon as the history is enough (Tuner._becomes_transfer):
# C (the tree) against O (the tree with it off: TRANSFER_CHECK_S = inf, so no full study ever looks),
# ResNet-50 b32 FP32 (examples/resnet50.yaml) from empty storage, winners', CuPy and CUDA caches,
# order C O O C C O; winners re-timed side by side (compare_and_count); phases per candidate (phases.py).
#   bash results/h100/fortyfirst/call3.sh   (device tool, nvidia-h200: carry [".probe/s35/whl"])
# Prediction (NOTES): 2-4 studies a run "full, then transfer"; C 10-25% fewer candidates and compile
# CPU-s, wall -8-20%; no layer over 1.05x the call's fastest more often in C than in O.
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
CONFIG=examples/resnet50.yaml
C_TREE=$PWD O=/tmp/tree_no_conversion
variant_tree $O autoconv/search/tuner.py 's/^TRANSFER_CHECK_S = 1.0$/TRANSFER_CHECK_S = float("inf")/' || exit 1
RUNS=()
run() { tune_in_turn 400 $R "$1" "$2" $CONFIG - 90; }  # name tree
run C_a $C_TREE; run O_a $O; run O_b $O; run C_b $C_TREE; run C_c $C_TREE; run O_c $O
python3 results/h100/fortyfirst/phases.py $(for r in "${RUNS[@]}"; do echo $R/tune_$r.json; done) | tee $R/phases.txt
compare_and_count $R $CONFIG 90 "${RUNS[@]}"
cd /tmp && tar czf $OUT/r.tgz r
