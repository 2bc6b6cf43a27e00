# Call 3 again for what it missed (its O tree was given the b256 config by a path relative to the
# tree, which the O tree lacks): ResNet-50 b256 on one GPU, verification inputs on the GPU (N, the
# tree) against on the host (O: the tree less gpu_inputs.diff), order N O O N, from empty storage,
# winners', CuPy and CUDA caches; then the GPU tests at the tree (both GPUs: the two-GPU test runs).
#   bash results/h100/fortysecond/call4.sh   (device tool, kind nvidia-h200-x2: carry [".probe/s35/whl"])
# Prediction: as call 3's (NOTES): N 25-35% faster than O at b256 (call 3's N runs 23.7 / 27.3 s,
# call 2's O-tree runs 41.1 / 43.2 s, in other calls).
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
N=$PWD O=/tmp/tree_host_inputs B256=$PWD/results/h100/fortysecond/resnet50_b256.yaml
rm -rf $O; mkdir -p $O; cp -r autoconv examples pyproject.toml search_spaces templates $O/
(cd $O && patch -R -p1 -s < $N/results/h100/fortysecond/gpu_inputs.diff) || { echo "the old tree did not build"; exit 1; }
RUNS=()
run() { tune_in_turn 200 $R "$1" "$2" $B256 - 70 --gpus 0; }  # name tree
run N256_a $N; run O256_a $O; run O256_b $O; run N256_b $N
python3 results/h100/fortyfirst/phases.py $(for r in "${RUNS[@]}"; do echo $R/tune_$r.json; done) > $R/phases.txt 2>&1
grep "^tune_" $R/phases.txt
rm -f $R/journal_*.gz
(cd /tmp && tar czf $OUT/r.tgz r)
timeout $(( 580 - ($(date +%s) - T0) )) python3 -m pytest -m gpu -q -p no:cacheprovider --ignore=tests/bench tests -x \
  > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/gpu_tests.log
cd /tmp && tar czf $OUT/r.tgz r
