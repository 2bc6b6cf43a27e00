# device call (thirteenth session): the TMA family with clusters of two blocks along m sharing B
# through multicast copies (CLUSTER_M 2; a GPU-first prototype, not in the emulator): its GPU
# tests, then each ResNet-50 layer's tuned configuration (the committed tf32 NHWC and bf16 runs'
# winners) beside the same with CLUSTER_M 2 and a few tile shapes, against cuDNN's best plan.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_tma_family.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep -E "passed|failed" /tmp/r/gpu_tests.log | tail -2
CONFIGS='[{}, {"CLUSTER_M": 2}, {"CLUSTER_M": 2, "BN": 256, "CONSUMERS": 2, "SCHEDULE": "cooperative"},
 {"CLUSTER_M": 2, "BN": 128, "CONSUMERS": 2, "SCHEDULE": "cooperative"}, {"CLUSTER_M": 2, "BN": 256, "CONSUMERS": 1, "SCHEDULE": "cooperative"},
 {"CLUSTER_M": 2, "BN": 128, "CONSUMERS": 3, "SCHEDULE": "cooperative"}]'
for run in "tf32 examples/resnet50_tf32_nhwc.yaml results/h100/resnet50_n32_tf32_nhwc/results.json" \
           "bf16 examples/resnet50_bf16.yaml results/h100/resnet50_n32_bf16/results.json"; do
    set -- $run
    s=$(date +%s); timeout 240 python3 examples/family_sweep.py $2 --family implicit_gemm_wgmma_tma \
        --base $3 --configs "$CONFIGS" --out /tmp/r/sweep_$1.json > /tmp/r/sweep_$1.log 2>&1
    echo "$1 sweep rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -8 /tmp/r/sweep_$1.log
done
cd /tmp && tar czf $OUT/r.tgz r
