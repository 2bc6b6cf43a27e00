# Twenty-third session: the cp.async wgmma families' warp-uniform warpgroup index, A/B on the fp32
# winners (results/h100/resnet50_n32) and batch 128's two implicit_gemm_wgmma_f16 winners
# (ab_families.py); then the whole GPU suite at this tree.
#   bash results/h100/uniform_descriptors/call2.sh   (carry [".whl"], nvidia-h100-x1)
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; git log -1 --format=%H; } > $R/env.txt 2>&1
timeout 150 python3 results/h100/uniform_descriptors/ab_families.py examples/resnet50.yaml \
  results/h100/resnet50_n32/results.json $R/ab_fp32.json > $R/ab_fp32.log 2>&1
echo "fp32 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/ab_fp32.log
timeout 60 python3 results/h100/uniform_descriptors/ab_families.py results/h100/resnet50_n128_bf16/config.yaml \
  results/h100/resnet50_n128_bf16/twentythird_session/results.json $R/ab_n128.json > $R/ab_n128.log 2>&1
echo "n128 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/ab_n128.log
timeout 370 python3 -m pytest -m gpu -q -p no:cacheprovider tests > $R/gpu_suite.log 2>&1
echo "gpu suite rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/gpu_suite.log
