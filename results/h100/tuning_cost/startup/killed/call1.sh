# device call 1 (seventeenth session): the GPU suite at HEAD, then the killed-tune GPU test
# repeated without and with ready_first.patch, keeping each run's tmp folder (journal).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; git log -1 --format=%H 2>/dev/null; } > $R/env.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
timeout 340 python3 -m pytest -m gpu -q -p no:cacheprovider -x --durations=15 tests > $R/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/suite.log
rm -rf /tmp/patched && mkdir /tmp/patched && cp -r autoconv templates search_spaces tests examples pyproject.toml /tmp/patched/
(cd /tmp/patched && patch -p1 < $OLDPWD/results/h100/tuning_cost/prefilter/ready_first.patch > /dev/null) || echo "patch failed"
K=tests/search/test_killed_tune.py::test_tune_on_the_gpu_killed_mid_search_resumes_and_leaves_no_process
for i in 1 2 3; do
  for v in plain patched; do
    [ $(( $(date +%s) - T0 )) -gt 560 ] && break 2
    root=$PWD; [ $v = patched ] && root=/tmp/patched
    (cd $root && PYTHONPATH=/tmp/site:$root timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu $K --basetemp=/tmp/kt_${v}_$i > $R/kt_${v}_$i.log 2>&1)
    echo "killed $v $i rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
    find /tmp/kt_${v}_$i -name "*.journal" -o -name "tune.json" | while read f; do cp $f $R/kt_${v}_${i}_$(basename $f); done
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
