# Twenty-second session, device call 3: the cuDNN heuristics probe (probe.py), bf16 NHWC, then tf32
# NHWC, then fp32 NCHW (strict), ResNet-50 at batch 32, until 480 s.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; git log -1 --format=%H; git status --short | head;
  python3 -c "import cupy,torch,cudnn;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version(),cudnn.backend_version(),cudnn.__version__)"; } > $OUT/env.txt 2>&1
timeout 560 python3 results/h100/cudnn_heuristics/probe.py examples/resnet50_bf16.yaml,examples/resnet50_tf32_nhwc.yaml,examples/resnet50.yaml $OUT/probe.json > $OUT/probe.log 2>&1
echo "rc=$?" >> $OUT/probe.log
