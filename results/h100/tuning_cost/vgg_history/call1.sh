# device call (eighth session): the 16-bit torch GPU tests and the bf16 e2e at 36c7b49 (kept weight casts); then #16 transfer: VGG-16 (batch 8) from empty storage and compute cache, without and then with the ResNet-50 fp32 winners (this session's three-worker run) as the cache it starts from
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/j
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/torch/test_torch_16bit_gpu.py > /tmp/j/tests.log 2>&1; echo "tests rc=$?"; tail -1 /tmp/j/tests.log
AUTOCONV_CACHE=$PWD/.probe/bf16_winners.sqlite3 timeout 150 python3 .probe/e2e_bf16.py /tmp/j/e2e.json > /tmp/j/e2e.log 2>&1; echo "e2e rc=$?"; tail -3 /tmp/j/e2e.log
s=$(date +%s); timeout 330 python3 examples/tuning_cost.py examples/vgg16.yaml --rounds 1 --variant "no history=" --out /tmp/j/plain > /tmp/j/plain.log 2>&1; echo "plain rc=$? wall=$(( $(date +%s) - s ))"; tail -4 /tmp/j/plain.log
s=$(date +%s); timeout 330 python3 examples/tuning_cost.py examples/vgg16.yaml --rounds 1 --history <the three-worker ResNet-50 cache of ../workers_per_gpu, call 3> --variant "resnet-50 history=" --out /tmp/j/history > /tmp/j/history.log 2>&1; echo "history rc=$? wall=$(( $(date +%s) - s ))"; tail -4 /tmp/j/history.log
cd /tmp && tar czf $OUT/j.tgz j
