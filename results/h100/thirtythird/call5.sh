# Thirty-third session, call 5 (nvidia-h200: one H200, 16 cores): what preparing a problem's buffers
# costs (prepare_cost.py), each ResNet-50 problem with the search's seed, then the finals' seed.
#   bash results/h100/thirtythird/call5.sh   (device tool: carry [".whl"])
source results/h100/tune_and_bench.sh; device_preamble /tmp/r
python3 results/h100/thirtythird/prepare_cost.py /tmp/r/prepare_cost.json > /tmp/r/prepare_cost.log 2>&1; echo rc $?
tail -4 /tmp/r/prepare_cost.log; cp -r /tmp/r $OUT/
