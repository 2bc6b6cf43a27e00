# device call 6 (sixteenth session, code faaded1): the whole GPU suite after the tuner's changes (prefilter, repair path)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r; git log -1 --format=%H > $OUT/r/commit.txt 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $OUT/r/env.txt
timeout 560 python3 -m pytest -m gpu -q -p no:cacheprovider tests > $OUT/r/gpu_suite.log 2>&1; echo "rc $?"
tail -5 $OUT/r/gpu_suite.log
