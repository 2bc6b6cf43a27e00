# Prepared in the forty-first session, NOT RUN unless its README says so: issue 16's target 4 in the
# device time a session has left after other calls (~400 s). nvidia-h200-x2 (2 H200s, 32 cores).
# ResNet-50 b32 FP32 from empty storage, winners', CuPy and CUDA caches, the default (transfer, and a
# full study becoming one once the history is enough): one GPU against two, order one two two one,
# then two GPUs with 4 workers each (the default on 32 cores is 3 a GPU) twice; winners re-timed side
# by side (compare_and_count); the test that needs two GPUs. Everything lands in $OUT/r.tgz.
#   bash results/h100/fortyfirst/next_call_x2_short.sh   (device tool, kind nvidia-h200-x2: carry [".probe/s35/whl"])
# Prediction: the full-then-transfer change converts more studies with 6-8 workers than with 4, so
# two GPUs gain more than one from it; still bound by the 32 cores' compiles: 1.2-1.5x, not 1.8x.
# Watch the two4 runs' winners per layer (per_layer.txt): eight studies begun at once convert early,
# with a model of their first rounds (NOTES, forty-first session's plan).
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
CONFIG=examples/resnet50.yaml
RUNS=()
run() { local name=$1; shift; tune_in_turn 250 $R "$name" $PWD $CONFIG - 80 "$@"; }
run one_a --gpus 0; run two_a --gpus 0,1; run two_b --gpus 0,1; run one_b --gpus 0
run two4_a --gpus 0,1 --workers-per-gpu 4; run two4_b --gpus 0,1 --workers-per-gpu 4
python3 results/h100/fortyfirst/phases.py $(for r in "${RUNS[@]}"; do echo $R/tune_$r.json; done) | tee $R/phases.txt
compare_and_count $R $CONFIG 80 "${RUNS[@]}"
timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider tests/torch/test_torch_gpu.py -k another_device > $R/two_gpu_test.log 2>&1
tail -2 $R/two_gpu_test.log
rm -f $R/journal_*.gz
cd /tmp && tar czf $OUT/r.tgz r
