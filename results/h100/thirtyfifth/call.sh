# Thirty-fifth session, calls 1 (FP32) and 2 (TF32), nvidia-h200 (one H200, 16 cores): a study's
# choices of family are the requested families that can run its problem (new: the working tree, d24b249's
# code) against every requested family (old: aa1f1b5, carried in .probe/s35/old). `autoconv tune` with
# `families:` omitted (every family), from empty storage, cache, CuPy and CUDA compute caches, order new
# old old new; each run's processes sampled (../thirtyfourth/proc_sampler.py; the call ran an
# identical copy in this folder), journals kept; then every run's winners
# re-timed side by side in one process (../twentyeighth/compare_caches.py).
#   CONFIG=examples/resnet50.yaml TAG=F bash results/h100/thirtyfifth/call.sh   (FP32: 6 of 8 families serve)
#   CONFIG=examples/resnet50_tf32_all.yaml TAG=T bash results/h100/thirtyfifth/call.sh   (TF32:
#   examples/resnet50_tf32.yaml without its `families:`, made below; 2 of 8 serve)
#   device tool: carry [".probe/s35"] (call 2: its old/ and whl/): the old tree, the wheels less cuDNN's frontend
set -u
[ -d .whl ] || ln -s .probe/s35/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
HERE=$PWD; OLD=$PWD/.probe/s35/old
grep -v "^families:" examples/resnet50_tf32.yaml > /tmp/resnet50_tf32_all.yaml
for tree in $HERE $OLD; do cp /tmp/resnet50_tf32_all.yaml $tree/examples/resnet50_tf32_all.yaml; done
tune() {  # name tree
  local name=$TAG$1 tree=$2
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  python3 $HERE/results/h100/thirtyfourth/proc_sampler.py $R/procs_$name.jsonl & local SP=$!
  local start=$(date +%s.%N)
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 110 python3 -m autoconv tune $CONFIG --storage $t/s.journal --cache $t/c.sqlite3 > $R/tune_$name.log 2>&1)
  local rc=$? end=$(date +%s.%N); kill $SP; wait $SP 2>/dev/null
  echo "tune $name rc=$rc wall=$(python3 -c "print(round($end-$start,2))") at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep -o "tuning took.*candidates" $R/tune_$name.log | tr -s ' ' | head -1
  local results_dir; results_dir=$(cd $tree && python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" $CONFIG)
  cp $results_dir/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz
  python3 $HERE/results/h100/thirtyfourth/timeline.py $R/procs_$name.jsonl $R/journal_$name.gz > $R/timeline_$name.txt 2>&1
  python3 $HERE/results/h100/thirtyfifth/journal_stats.py $R/journal_$name.gz | head -4
}
tune new_a $HERE; tune old_a $OLD; tune old_b $OLD; tune new_b $HERE
caches=""; for n in new_a old_a old_b new_b; do [ -f /tmp/t_$TAG$n/c.sqlite3 ] && caches="$caches $n=/tmp/t_$TAG$n/c.sqlite3"; done
left=$(( 585 - ($(date +%s) - T0) ))
[ $left -gt 20 ] && timeout $left python3 results/h100/twentyeighth/compare_caches.py $CONFIG $R/compare_$TAG.json $caches > $R/compare_$TAG.log 2>&1
echo "compare rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; grep geomean $R/compare_$TAG.log
gzip $R/procs_*.jsonl; cd /tmp && tar czf $OUT/r.tgz r
