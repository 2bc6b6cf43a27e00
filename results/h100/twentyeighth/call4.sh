# Twenty-eighth session, call 4, one H100: issue 16 target 2, `--transfer` compiling the next
# problem's start ahead (new: the working tree) against the same without it (old: f4a6326, unpacked
# into .probe/old28). ResNet-50 fp32 tuned from empty first (its storage and winners' cache are the
# history), then VGG-16 (examples/vgg16.yaml, batch 8) in the order new1 plain1 old1 old2 plain2 new2:
#   new/old  the history copied in, --transfer
#   plain    no history (empty storage and cache), the default search (the working tree)
# every run from empty CuPy and CUDA caches, its journal kept; then every VGG-16 run's winners
# re-timed side by side in one process (compare_caches.py).
#   bash results/h100/twentyeighth/call4.sh   (device tool: carry [".whl", ".probe/old28"])
set -u
source results/h100/tune_and_bench.sh
ROOT=$PWD; R=/tmp/r; device_preamble $R
tune() {  # name tree config history-dir [extra args]
  local name=$1 tree=$2 config=$3 hist=$4; shift 4
  local left=$(( 540 - ($(date +%s) - T0) )); [ $left -lt 60 ] && { echo "tune $name skipped ($left s left)" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  [ -n "$hist" ] && cp $hist/c.sqlite3 $hist/s.journal $t/
  local s=$(date +%s.%N)
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout $(( left < 150 ? left : 150 )) python3 -m autoconv tune $config --storage $t/s.journal --cache $t/c.sqlite3 "$@" > $R/tune_$name.log 2>&1)
  echo "tune $name rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep "tuning took" $R/tune_$name.log | cut -c1-200
  local results_dir; results_dir=$(cd $tree && PYTHONPATH=/tmp/site:$tree python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp $results_dir/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz; gzip -f $R/tune_$name.log
}
OLD=$ROOT/.probe/old28
tune rn50 $ROOT examples/resnet50.yaml ""
mkdir -p /tmp/hist && cp /tmp/t_rn50/c.sqlite3 /tmp/t_rn50/s.journal /tmp/hist/
tune new1 $ROOT examples/vgg16.yaml /tmp/hist --transfer
tune plain1 $ROOT examples/vgg16.yaml ""
tune old1 $OLD examples/vgg16.yaml /tmp/hist --transfer
tune old2 $OLD examples/vgg16.yaml /tmp/hist --transfer
tune plain2 $ROOT examples/vgg16.yaml ""
tune new2 $ROOT examples/vgg16.yaml /tmp/hist --transfer
timeout 120 python3 results/h100/twentyeighth/compare_caches.py examples/vgg16.yaml $R/compare.json \
  plain1=/tmp/t_plain1/c.sqlite3 plain2=/tmp/t_plain2/c.sqlite3 new1=/tmp/t_new1/c.sqlite3 \
  new2=/tmp/t_new2/c.sqlite3 old1=/tmp/t_old1/c.sqlite3 old2=/tmp/t_old2/c.sqlite3 > $R/compare.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -6 $R/compare.log
cd /tmp && tar czf $OUT/r.tgz r
