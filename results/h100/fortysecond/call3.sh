# Verification inputs made on the GPU (N, the tree) against on the host with NumPy (O: the tree less
# gpu_inputs.diff), nvidia-h200-x2 (2 H200s, 32 cores), every tune from empty storage, winners', CuPy
# and CUDA caches:
#  0. prep_cost.py: a worker's seconds per layer for the buffers, b32 and b256 (both inputs' ways).
#  1. ResNet-50 b256 on one GPU, N O O N; 2. ResNet-50 b32 on one GPU, N O O N;
#  3. ResNet-50 b256 on two GPUs with N, twice (against 1's N runs, the same call).
# Winners re-timed side by side (compare_and_count) for b256, phases per candidate (phases.py).
#   bash results/h100/fortysecond/call3.sh   (device tool, kind nvidia-h200-x2: carry [".probe/s35/whl"])
# Prediction (NOTES, forty-second session): host inputs 0.05-0.2 s a b32 layer, 0.5-2 s a b256 one; on
# the GPU milliseconds. b256 one GPU 25-35% faster (41-43 s in call 2: each worker made each problem's
# inputs, and its finals', ~60 times, ~1 s each); b32 0-6% faster; b256 two GPUs against one with N:
# 1.1-1.3x (call 2: 1.25x; both gain).
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
B32=examples/resnet50.yaml B256=results/h100/fortysecond/resnet50_b256.yaml
N=$PWD O=/tmp/tree_host_inputs
rm -rf $O; mkdir -p $O; cp -r autoconv examples pyproject.toml search_spaces templates $O/
(cd $O && patch -R -p1 -s < $N/results/h100/fortysecond/gpu_inputs.diff) || { echo "the old tree did not build"; exit 1; }
timeout 120 python3 results/h100/fortysecond/prep_cost.py $B32 $B256 > $R/prep_cost.txt 2>&1; tail -3 $R/prep_cost.txt
RUNS=()
run() { local limit=$1 name=$2 tree=$3 config=$4 timeout=$5; shift 5; tune_in_turn "$limit" $R "$name" "$tree" "$config" - "$timeout" "$@"; }
run 250 N256_a $N $B256 100 --gpus 0; run 280 O256_a $O $B256 100 --gpus 0
run 320 O256_b $O $B256 100 --gpus 0; run 360 N256_b $N $B256 100 --gpus 0
B256_RUNS=("${RUNS[@]}"); RUNS=()
run 400 N_a $N $B32 60 --gpus 0; run 430 O_a $O $B32 60 --gpus 0
run 460 O_b $O $B32 60 --gpus 0; run 490 N_b $N $B32 60 --gpus 0
B32_RUNS=("${RUNS[@]}"); RUNS=()
run 500 N256two_a $N $B256 80 --gpus 0,1; run 530 N256two_b $N $B256 80 --gpus 0,1
TWO_RUNS=("${RUNS[@]}")
python3 results/h100/fortyfirst/phases.py $(for r in "${B256_RUNS[@]}" "${B32_RUNS[@]}" "${TWO_RUNS[@]}"; do echo $R/tune_$r.json; done) > $R/phases.txt 2>&1
grep "^tune_" $R/phases.txt
rm -f $R/journal_*.gz
compare_runs $R $B256 compare 50 "${B256_RUNS[@]}" "${TWO_RUNS[@]}"
python3 results/h100/thirtyeighth/per_layer.py $R/compare.json 1.04 > $R/per_layer.txt 2>&1; head -12 $R/per_layer.txt
cd /tmp && tar czf $OUT/r.tgz r
