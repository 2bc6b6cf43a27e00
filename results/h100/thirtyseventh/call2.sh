# Thirty-seventh session, call 2, nvidia-h200 (one H200, 16 cores): how many tuned problems a transfer
# needs. From empty storage a run's first studies are full until the history's model knows
# transfer.MIN_PROBLEMS problems (8: a judgement, never measured); on ResNet-50 b32 bf16 (call 1) 10 of
# 23 studies were full and took ~20 of its ~33 s of search. Here ResNet-50 b32 FP32 from empty storage,
# winners', CuPy and CUDA caches with MIN_PROBLEMS 8 (the tree, T8) and 4 (a copy of it with that one
# line changed, T4), order T8 T4 P T4 T8 (P: `--no-transfer`, the winners' reference); the five runs'
# winners re-timed side by side (../twentyeighth/compare_caches.py).
#   bash results/h100/thirtyseventh/call2.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
T8=$PWD T4=/tmp/tree4
mkdir -p $T4 && cp -r autoconv examples pyproject.toml search_spaces templates $T4/
sed -i 's/^MIN_PROBLEMS = 8$/MIN_PROBLEMS = 4/' $T4/autoconv/search/transfer.py
grep -n "^MIN_PROBLEMS" $T8/autoconv/search/transfer.py $T4/autoconv/search/transfer.py | tee -a $R/times.txt
RN=examples/resnet50.yaml
run() {  # name tree [args]: skipped where too little of the call's 600 s is left for it and the comparison
  if [ $(( $(date +%s) - T0 )) -gt 400 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  local name=$1 tree=$2; shift 2
  tune_run $R $name $tree $RN - 100 "$@"
}
run T8_a $T8; run T4_a $T4; run P $T8 --no-transfer; run T4_b $T4; run T8_b $T8
caches=""; for label in P T8_a T4_a T4_b T8_b; do
  [ -f /tmp/t_$label/c.sqlite3 ] && caches="$caches $label=/tmp/t_$label/c.sqlite3"; done
timeout 100 python3 results/h100/twentyeighth/compare_caches.py $RN $R/compare.json $caches > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
