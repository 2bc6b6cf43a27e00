# Twenty-fifth session, call 5 (nvidia-h100-x1): torchvision ResNet-50's forward through autoconv.torch.convert with
# today's winners, against PyTorch, in tf32 (float32, channels_last, PyTorch's default TF32) and bf16 (autocast).
# Each precision: tuned from empty storage and cache, benchmarked (so that the runtime knows cuDNN's time per
# layer and runs the faster), then the forward with that cache (../resnet50_e2e_tf32/e2e_tf32.py,
# ../resnet50_e2e_bf16/e2e_bf16.py: eager and CUDA graphs, the variants alternating, median round).
#   bash results/h100/twentyfifth/call5.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
source results/h100/tune_and_bench.sh
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc
  python3 -c "import cupy,torch,torchvision;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version(),torchvision.__version__)"; } > /tmp/o/env.txt 2>&1
tune_and_bench tf32_nhwc examples/resnet50_tf32_nhwc.yaml /tmp/o 100 100
timeout 90 python3 results/h100/resnet50_e2e_tf32/e2e_tf32.py /tmp/o/tf32_nhwc/e2e.json > /tmp/o/tf32_nhwc/e2e.log 2>&1
echo "tf32 e2e rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -4 /tmp/o/tf32_nhwc/e2e.log
tune_and_bench bf16 examples/resnet50_bf16.yaml /tmp/o 100 90
timeout 90 python3 results/h100/resnet50_e2e_bf16/e2e_bf16.py /tmp/o/bf16/e2e.json > /tmp/o/bf16/e2e.log 2>&1
echo "bf16 e2e rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -4 /tmp/o/bf16/e2e.log
tar czf $OUT/call5.tgz -C /tmp/o .
