# device call (thirteenth session, H100): the TMA family's GPU tests (K split among them), then
# K split beside each layer's tuned configuration (the committed tf32 NHWC and bf16 runs' winners
# as the base) on ResNet-50's layers of few tiles, against cuDNN's best plan in the same precision.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/r; mkdir -p /tmp/r; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/r/env.txt 2>&1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/emulator/test_wgmma_tma_family.py > /tmp/r/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; grep -E "passed|failed" /tmp/r/gpu_tests.log | tail -2
LAYERS=layer3.0.conv2,layer3.1.conv1,layer3.1.conv2,layer4.0.conv2,layer4.0.conv3,layer4.0.downsample.0,layer4.1.conv1,layer4.1.conv2
CONFIGS='[{}, {"SCHEDULE": "k_split", "CONSUMERS": 2, "STAGES": 4}, {"SCHEDULE": "k_split", "CONSUMERS": 2, "STAGES": 6},
 {"SCHEDULE": "k_split", "CONSUMERS": 2, "STAGES": 8}, {"SCHEDULE": "k_split", "CONSUMERS": 3, "STAGES": 6},
 {"SCHEDULE": "k_split", "CONSUMERS": 2, "STAGES": 4, "BN": 128}, {"SCHEDULE": "k_split", "CONSUMERS": 2, "STAGES": 6, "BN": 64}]'
for run in "tf32 examples/resnet50_tf32_nhwc.yaml results/h100/resnet50_n32_tf32_nhwc/results.json" \
           "bf16 examples/resnet50_bf16.yaml results/h100/resnet50_n32_bf16/results.json"; do
    set -- $run
    s=$(date +%s); timeout 230 python3 examples/family_sweep.py $2 --family implicit_gemm_wgmma_tma --layers $LAYERS \
        --base $3 --configs "$CONFIGS" --out /tmp/r/sweep_$1.json > /tmp/r/sweep_$1.log 2>&1
    echo "$1 sweep rc=$? wall=$(( $(date +%s) - s )) at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -9 /tmp/r/sweep_$1.log
done
cd /tmp && tar czf $OUT/r.tgz r
