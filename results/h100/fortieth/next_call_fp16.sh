# Prepared in the fortieth session, NOT RUN (its device time was spent): the runner-up tiles' other
# stages in fp16, which got them by analogy with bf16 (the same kernel; runners_up.PARTNERS).
# nvidia-h200 (one GPU, 16 cores), ~420 s. ResNet-50 b32 fp16 NHWC (examples/resnet50_bf16.yaml with
# `precision: fp16`) from empty storage, winners', CuPy and CUDA caches: the tree (S) against it
# without fp16's entry in PARTNERS (W: the splits alone), order S W W S W S S W; winners re-timed
# side by side (compare_runs), each run against the call's fastest per layer; journals counted.
#   bash results/h100/fortieth/next_call_fp16.sh   (device tool: carry [".probe/s35/whl"])
# Prediction: as bf16 (call 1): W loses layer4.0.conv3 or downsample.0 by 1.1x in 1-3 of 4 runs, S
# in none; S +4-10% candidates, time within +-8%.
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
CONFIG=examples/resnet50_fp16_probe.yaml  # (beside the bf16 config, so that its relative paths hold)
sed 's/^precision: bf16$/precision: fp16/; s/^results: \(.*\)resnet50_bf16$/results: \1resnet50_fp16/' \
  examples/resnet50_bf16.yaml > $CONFIG
grep -n "^precision\|^results" $CONFIG | tee -a $R/times.txt
S_TREE=$PWD W=/tmp/tree_fp16_split_only
variant_tree $W autoconv/search/runners_up.py '/("implicit_gemm_wgmma_tma", "fp16"): (SPLIT, "STAGES"),/d' || exit 1
grep -n -A3 "^PARTNERS" $W/autoconv/search/runners_up.py | tee -a $R/times.txt
RUNS=()
run() { tune_in_turn 420 $R "$1" "$2" $CONFIG - 70; }  # name tree
run S_a $S_TREE; run W_a $W; run W_b $W; run S_b $S_TREE; run W_c $W; run S_c $S_TREE; run S_d $S_TREE; run W_d $W
compare_and_count $R $CONFIG 90 "${RUNS[@]}"
cd /tmp && tar czf $OUT/r.tgz r
