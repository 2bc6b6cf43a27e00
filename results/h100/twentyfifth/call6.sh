# Twenty-fifth session, call 6 (nvidia-h100-x1): tf32 NHWC on shapes the tf32 work never tuned for, Inception-v3's
# ten odd layers (batch 32) and VGG-16's conv layers (batch 8), each tuned from empty storage and cache, then
# benchmarked against cuDNN's best TF32 plan (NHWC) and PyTorch.
#   bash results/h100/twentyfifth/call6.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
source results/h100/tune_and_bench.sh
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc
  python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
tune_and_bench inception_v3_tf32_nhwc results/h100/twentyfifth/inception_v3_tf32_nhwc.yaml /tmp/o 150 150
tune_and_bench vgg16_tf32_nhwc results/h100/twentyfifth/vgg16_tf32_nhwc.yaml /tmp/o 150 150
tar czf $OUT/call6.tgz -C /tmp/o .
