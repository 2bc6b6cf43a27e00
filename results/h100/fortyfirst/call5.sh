# Many workers on one GPU: six studies begin at once, so the history is "enough" early and the
# conversion of full studies (Tuner._becomes_transfer) acts on studies with a model of their first
# rounds. C (the tree) against O (conversion off: TRANSFER_CHECK_S = inf), both --workers-per-gpu 6,
# ResNet-50 b32 FP32 from empty storage, winners', CuPy and CUDA caches, order C O O C; winners
# re-timed side by side (compare_and_count), phases per candidate (phases.py).
#   bash results/h100/fortyfirst/call5.sh   (device tool, nvidia-h200: carry [".probe/s35/whl"])
# Prediction (NOTES): C converts 5-8 studies a run; no layer over 1.05x the call's fastest more often
# in C than in O; C's wall within -15%..+5% of O's (6 workers on 16 cores are compile-bound).
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
CONFIG=examples/resnet50.yaml
C_TREE=$PWD O=/tmp/tree_no_conversion
variant_tree $O autoconv/search/tuner.py 's/^TRANSFER_CHECK_S = 1.0$/TRANSFER_CHECK_S = float("inf")/' || exit 1
RUNS=()
run() { tune_in_turn 230 $R "$1" "$2" $CONFIG - 80 --gpus 0 --workers-per-gpu 6; }  # name tree
run C_a $C_TREE; run O_a $O; run O_b $O; run C_b $C_TREE
python3 results/h100/fortyfirst/phases.py $(for r in "${RUNS[@]}"; do echo $R/tune_$r.json; done) | tee $R/phases.txt
compare_and_count $R $CONFIG 80 "${RUNS[@]}"
cd /tmp && tar czf $OUT/r.tgz r
