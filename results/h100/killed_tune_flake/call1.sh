# Twenty-third session: the GPU suite's killed-tune test failed once (9 evaluated trials, budget 8;
# run seed giving the test's seed 596010227). Run it again four times with that seed, its
# failure message now listing every trial; keep each run's journal and cache.
#   bash results/h100/killed_tune_flake/call1.sh   (carry [".whl"], nvidia-h100-x1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD AUTOCONV_TEST_SEED=614018016
T0=$(date +%s)
for i in 1 2 3 4; do
  timeout 150 python3 -m pytest -m gpu -p no:cacheprovider --basetemp=/tmp/bt$i \
    "tests/search/test_killed_tune.py::test_tune_on_the_gpu_killed_mid_search_resumes_and_leaves_no_process" > $OUT/run$i.log 2>&1
  echo "run $i rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $OUT/times.txt; tail -1 $OUT/run$i.log
done
tar czf $OUT/state.tgz -C /tmp bt1 bt2 bt3 bt4 2>/dev/null; ls -la $OUT
