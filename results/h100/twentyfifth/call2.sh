# Twenty-fifth session, call 2 (nvidia-h100-x1): does call 1's tf32 figure (1.180x) reproduce, and does fp32 stay?
#   1. tf32 NHWC ResNet-50 at batch 32 tuned from empty storage and cache, then benchmarked (as call 1);
#   2. fp32 (strict accuracy) ResNet-50 at batch 32 tuned from empty and benchmarked;
#   3. ncu: the two 3x3 layers at 14 x 14, 192 x 64 tiles with the pixels on M against 64 x 192 with the filters.
#   bash results/h100/twentyfifth/call2.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
source results/h100/tune_and_bench.sh
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; ncu --version | tail -1
  python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
tune_and_bench tf32_nhwc examples/resnet50_tf32_nhwc.yaml /tmp/o 120 130
tune_and_bench fp32 examples/resnet50.yaml /tmp/o 150 120
timeout 100 ncu --clock-control none --profile-from-start off --set full --csv --page raw \
  python3 results/h100/twentyfifth/ncu_m_side.py > /tmp/o/ncu_raw.csv 2> /tmp/o/ncu.err
echo "ncu rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/ncu.err; gzip /tmp/o/ncu_raw.csv
tar czf $OUT/call2.tgz -C /tmp/o .
