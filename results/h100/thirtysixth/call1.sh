# Thirty-sixth session, call 1, nvidia-h200 (one H200, 16 cores): the transfer's per-parameter polish
# (pp: HEAD with ../thirtyfourth/per_parameter_polish.diff, carried in .probe/s36/pp) against without
# (head: the working tree). ResNet-50 b32 FP32 from empty with `--transfer`, head then pp (H_head is the
# history of what follows); Inception-v3's ten layers with H_head's storage and cache, `--transfer`,
# order pp head head pp, and one full study (P); VGG-16 b8 likewise. Each set's winners re-timed side
# by side in one process (../twentyeighth/compare_caches.py), relative to the first label.
#   bash results/h100/thirtysixth/call1.sh   (device tool: carry [".probe/s35/whl", ".probe/s36/pp"])
# The pp tree: mkdir -p .probe/s36/pp && git archive HEAD autoconv examples pyproject.toml search_spaces
#   templates | tar -x -C .probe/s36/pp && (cd .probe/s36/pp && patch -p1 -s < ../../../results/h100/
#   thirtyfourth/per_parameter_polish.diff)   (its tests' hunk finds no tests/ there and is skipped)
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=$OUT/r; device_preamble $R
HEAD=$PWD PP=$PWD/.probe/s36/pp
IN=examples/inception_v3_layers.yaml VGG=examples/vgg16.yaml
compare() {  # config json-name label=run...
  local config=$1 name=$2; shift 2
  local caches=""; for pair in "$@"; do caches="$caches ${pair%%=*}=/tmp/t_${pair#*=}/c.sqlite3"; done
  timeout 90 python3 results/h100/twentyeighth/compare_caches.py $config $R/compare_$name.json $caches > $R/compare_$name.log 2>&1
  echo "compare $name rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep -E "Conv2d_4a|geomean" $R/compare_$name.log
}
tune_run $R H_head $HEAD examples/resnet50.yaml - 100 --transfer
tune_run $R H_pp $PP examples/resnet50.yaml - 100 --transfer
for run in pp_a:$PP head_a:$HEAD head_b:$HEAD pp_b:$PP; do tune_run $R I_${run%%:*} ${run#*:} $IN H_head 60 --transfer; done
tune_run $R I_P $HEAD $IN H_head 80
compare $IN inception P=I_P head_a=I_head_a pp_a=I_pp_a head_b=I_head_b pp_b=I_pp_b
for run in pp_a:$PP head_a:$HEAD head_b:$HEAD pp_b:$PP; do tune_run $R V_${run%%:*} ${run#*:} $VGG H_head 60 --transfer; done
tune_run $R V_P $HEAD $VGG H_head 80
compare $VGG vgg P=V_P head_a=V_head_a pp_a=V_pp_a head_b=V_head_b pp_b=V_pp_b
compare examples/resnet50.yaml resnet50 head=H_head pp=H_pp
