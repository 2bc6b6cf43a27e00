# device call 4 (seventeenth session): the whole GPU suite at the session's last code commit.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $R/env.txt 2>&1
timeout 320 python3 -m pytest -m gpu -q -p no:cacheprovider --durations=10 tests > $R/suite.log 2>&1
echo "suite rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -3 $R/suite.log
cd $OUT && tar czf r.tgz r && rm -rf r
