# device call 7 (fourteenth session): the whole GPU suite at HEAD, its log written straight to $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } > $OUT/env.txt 2>&1
timeout 250 python3 -m pytest -m gpu -q -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc=$?"; tail -3 $OUT/gpu_suite.log
