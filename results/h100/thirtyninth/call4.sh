# Thirty-ninth session, call 4 (the session's last ~200 s of device time): the runner-up tiles'
# cost in bf16 again, the order swapped from call 3's: R H H R, ResNet-50 b32 bf16 NHWC
# (examples/resnet50_bf16.yaml) from empty, the tree (R) against RUNNER_UP_TILES = 0 (H); wall
# times and candidates only (no time left to re-time the winners).
#   bash results/h100/thirtyninth/call4.sh   (device tool: carry [".probe/s35/whl"])
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
H=/tmp/tree_without R_TREE=$PWD
mkdir -p $H && cp -r autoconv examples pyproject.toml search_spaces templates $H/
sed -i 's/^RUNNER_UP_TILES = .*/RUNNER_UP_TILES = 0/' $H/autoconv/search/runners_up.py
run() {  # name tree: skipped where too little of the call's time is left
  if [ $(( $(date +%s) - T0 )) -gt 125 ]; then echo "skip $1" | tee -a $R/times.txt; return; fi
  tune_run $R $1 $2 examples/resnet50_bf16.yaml - 60
  cd /tmp && tar czf $OUT/r.tgz r; cd - > /dev/null  # (what is done so far, should the call be cut)
}
run R_bf16_c $R_TREE; run H_bf16_c $H; run H_bf16_d $H; run R_bf16_d $R_TREE
