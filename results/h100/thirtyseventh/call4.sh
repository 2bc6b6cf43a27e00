# Thirty-seventh session, call 4, nvidia-h200 (one H200, 16 cores): the polish's joint variations of
# the grid's parameters (transfer.JOINT_VARIATIONS_PER_BEST: 2 in the tree, J2) against none (J0: the
# tree copied with that one line set to 0, which is the polish before 48524b6). ResNet-50 b32 FP32 from
# empty storage, winners', CuPy and CUDA caches, order J0 J2 J2 J0 J0 J2 J2 J0; the runs' winners re-timed
# side by side (../twentyeighth/compare_caches.py).
#   bash results/h100/thirtyseventh/call4.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
J2=$PWD J0=/tmp/tree_j0
mkdir -p $J0 && cp -r autoconv examples pyproject.toml search_spaces templates $J0/
sed -i 's/^JOINT_VARIATIONS_PER_BEST = 2$/JOINT_VARIATIONS_PER_BEST = 0/' $J0/autoconv/search/transfer.py
grep -n "^JOINT_VARIATIONS_PER_BEST" $J2/autoconv/search/transfer.py $J0/autoconv/search/transfer.py | tee -a $R/times.txt
RN=examples/resnet50.yaml
run() {  # name tree: skipped where too little of the call's time is left for it and the comparison
  if [ $(( $(date +%s) - T0 )) -gt 330 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R $1 $2 $RN - 80
}
run J0_a $J0; run J2_a $J2; run J2_b $J2; run J0_b $J0; run J0_c $J0; run J2_c $J2; run J2_d $J2; run J0_d $J0
caches=""; for label in J0_a J2_a J2_b J0_b J0_c J2_c J2_d J0_d; do
  [ -f /tmp/t_$label/c.sqlite3 ] && caches="$caches $label=/tmp/t_$label/c.sqlite3"; done
timeout 110 python3 results/h100/twentyeighth/compare_caches.py $RN $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
