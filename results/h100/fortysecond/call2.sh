# Two GPUs against one where the extra workers do not add studies, and where the GPU's share is larger.
# nvidia-h200-x2 (2 H200s, 32 cores), every tune from empty storage, winners', CuPy and CUDA caches.
#  1. ResNet-50 b32: one GPU with its default 4 workers against two GPUs with 2 each (the same 4
#     studies at a time; the default on two GPUs is 3 each), order one two2 two2 one.
#  2. ResNet-50 b256 (resnet50_b256.yaml), defaults: one GPU against two, order one two two one.
# Winners re-timed side by side per batch (compare_and_count), phases per candidate (phases.py).
#   bash results/h100/fortysecond/call2.sh   (device tool, kind nvidia-h200-x2: carry [".probe/s35/whl"])
# Prediction (NOTES, forty-second session): b32 two2 within 1.0-1.1x of one (the same candidates, no
# GPU queue); b256 two 1.3-1.6x one (screening replays are ~1 ms whatever the batch, so the GPU's
# share grows less than the batch; verification and the buffers grow with it).
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
B32=examples/resnet50.yaml B256=results/h100/fortysecond/resnet50_b256.yaml
RUNS=()
run() { local limit=$1 name=$2 config=$3 timeout=$4; shift 4; tune_in_turn "$limit" $R "$name" $PWD "$config" - "$timeout" "$@"; }
run 200 one_a $B32 80 --gpus 0; run 200 two2_a $B32 80 --gpus 0,1 --workers-per-gpu 2
run 200 two2_b $B32 80 --gpus 0,1 --workers-per-gpu 2; run 200 one_b $B32 80 --gpus 0
B32_RUNS=("${RUNS[@]}"); RUNS=()
run 330 one256_a $B256 150 --gpus 0; run 360 two256_a $B256 120 --gpus 0,1
run 400 two256_b $B256 120 --gpus 0,1; run 430 one256_b $B256 150 --gpus 0
B256_RUNS=("${RUNS[@]}")
python3 results/h100/fortyfirst/phases.py $(for r in "${B32_RUNS[@]}" "${B256_RUNS[@]}"; do echo $R/tune_$r.json; done) | tee $R/phases.txt
compare_and_count $R $B32 50 "${B32_RUNS[@]}"
mkdir -p $R/b32 && mv $R/compare.* $R/per_layer.txt $R/split_polish.txt $R/b32/
rm -f $R/journal_{one,two2}_?.gz
compare_and_count $R $B256 70 "${B256_RUNS[@]}"
rm -f $R/journal_*.gz
cd /tmp && tar czf $OUT/r.tgz r
