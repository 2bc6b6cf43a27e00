# Prepared in the thirty-seventh session, NOT RUN (its device time was spent): whether a transfer
# polish that times every other SPLIT_K of its best (every_split_polish.diff: transfer.EVERY_CHOICE)
# keeps the layers runs from empty lose. In this session's 16 FP32 runs from empty, SPLIT_K was one of
# the parameters in which 10 of the 19 (run, layer) pairs over 1.04x the call's fastest differed from
# that fastest winner, alone in 4 (README.md here, "Call 4"). nvidia-h200 (one GPU, 16 cores), ~400 s.
# ResNet-50 b32 FP32 from empty storage, winners', CuPy and CUDA caches: the tree (H) against the tree
# with the diff (E), order H E E H H E E H; the runs' winners re-timed side by side.
#   bash results/h100/thirtyseventh/next_call_every_split.sh   (device tool: carry [".probe/s35/whl"])
# Before: the tree and the carried wheels must stay under the tool's 64 MiB (../tune_and_bench.sh).
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
H=$PWD E=/tmp/tree_every_split
mkdir -p $E && cp -r autoconv examples pyproject.toml search_spaces templates tests $E/
(cd $E && patch -p1 -s < $H/results/h100/thirtyseventh/every_split_polish.diff) || { echo "the diff does not apply" | tee -a $R/times.txt; exit 1; }
grep -n "^EVERY_CHOICE" $E/autoconv/search/transfer.py | tee -a $R/times.txt
RN=examples/resnet50.yaml
run() {  # name tree: skipped where too little of the call's time is left for it and the comparison
  if [ $(( $(date +%s) - T0 )) -gt 330 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R $1 $2 $RN - 80
}
run H_a $H; run E_a $E; run E_b $E; run H_b $H; run H_c $H; run E_c $E; run E_d $E; run H_d $H
compare_runs $R $RN compare 110 H_a E_a E_b H_b H_c E_c E_d H_d
cd /tmp && tar czf $OUT/r.tgz r
