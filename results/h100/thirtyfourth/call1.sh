# Thirty-fourth session, call 1 (nvidia-h200: one H200, 16 cores): `autoconv tune` as users run it,
# through the console script, with the command modules imported at the top of the script's module
# (old: 71ce9d4, carried in .probe/s34/old) and when the parser is built (new: the working tree).
# ResNet-50 b32 fp32 from empty storage, cache, CuPy and CUDA compute caches; order new old old new,
# then `python3 -m autoconv` (new). Every process of each run sampled (proc_sampler.py), journals kept.
#   bash results/h100/thirtyfourth/call1.sh   (device tool: carry [".probe/s34"]: the old tree, and the
#   wheels less cuDNN's frontend, which tuning does not use: the tree and .whl/ exceeded the 64 MiB)
set -u
[ -d .whl ] || ln -s .probe/s34/whl .whl
source results/h100/tune_and_bench.sh
R=/tmp/r; device_preamble $R
HERE=$PWD; OLD=$PWD/.probe/s34/old
mkdir -p /tmp/bin && printf '#!/usr/bin/env python3\nimport re\nimport sys\nfrom autoconv.commands.main import main\nif __name__ == "__main__":\n    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])\n    sys.exit(main())\n' > /tmp/bin/autoconv
chmod +x /tmp/bin/autoconv; cat /tmp/bin/autoconv
tune() {  # name tree command...
  local name=$1 tree=$2; shift 2
  [ $(( $(date +%s) - T0 )) -gt 470 ] && { echo "skip $name" | tee -a $R/times.txt; return; }
  local t=/tmp/t_$name; rm -rf $t; mkdir -p $t
  python3 $HERE/results/h100/thirtyfourth/proc_sampler.py $R/procs_$name.jsonl & local SP=$!
  local start=$(date +%s.%N)
  (cd $tree && PYTHONPATH=/tmp/site:$tree CUPY_CACHE_DIR=$t/cupy CUDA_CACHE_PATH=$t/cc timeout 100 "$@" tune examples/resnet50.yaml --storage $t/s.journal --cache $t/c.sqlite3 > $R/tune_$name.log 2>&1)
  local rc=$? end=$(date +%s.%N); kill $SP; wait $SP 2>/dev/null
  echo "tune $name rc=$rc wall=$(python3 -c "print(round($end-$start,2))") at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  grep -o "tuning took.*candidates" $R/tune_$name.log | tr -s ' ' | head -1
  cp $tree/results/resnet50/tune.json $R/tune_$name.json; gzip -c $t/s.journal > $R/journal_$name.gz
  python3 $HERE/results/h100/thirtyfourth/timeline.py $R/procs_$name.jsonl $R/journal_$name.gz > $R/timeline_$name.txt 2>&1
  head -22 $R/timeline_$name.txt; tail -1 $R/timeline_$name.txt
}
tune new_a $HERE /tmp/bin/autoconv
tune old_a $OLD /tmp/bin/autoconv
tune old_b $OLD /tmp/bin/autoconv
tune new_b $HERE /tmp/bin/autoconv
tune newm $HERE python3 -m autoconv
gzip $R/procs_*.jsonl; cd /tmp && tar czf $OUT/r.tgz r
