# device call 1 (tenth session, H100): SCHEDULE stream_k against the committed bf16 winners, each
# layer's winner as it is and with stream_k (MIN_BLOCKS as tuned, and 2), beside cuDNN's best bf16
# plan in one process; then the GPU test suite (041cf92's worker protocol, the stream-K GPU test).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
mkdir -p /tmp/f
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; git log -1 --format=%H 2>/dev/null; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/f/env.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
timeout 260 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_f16 \
  --base results/h100/resnet50_n32_bf16/results.json \
  --configs '[{}, {"SCHEDULE": "stream_k", "SPLIT_K": 1}, {"SCHEDULE": "stream_k", "SPLIT_K": 1, "MIN_BLOCKS": 2}]' \
  --out /tmp/f/sweep.json > /tmp/f/sweep.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
tail -6 /tmp/f/sweep.log
timeout $(( 560 - ($(date +%s) - T0) )) python3 -m pytest -m gpu -q -p no:cacheprovider --junitxml=/tmp/f/gpu.xml > /tmp/f/gpu.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/f/times.txt
tail -15 /tmp/f/gpu.log
cd /tmp && tar czf $OUT/f.tgz f
