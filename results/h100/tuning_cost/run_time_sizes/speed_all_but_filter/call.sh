# device calls 1-2 (eighteenth session): run-time sizes (call 2: N, C, K only) in implicit_gemm_wgmma against compiled-in
# sizes (speed.py), then the GPU suite.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; git log -1 --format=%H 2>/dev/null; } > $R/env.txt 2>&1
timeout 300 python3 .probe/rts/speed.py $R/speed2.json > $R/speed2.log 2>&1
echo "speed rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -8 $R/speed2.log
timeout $(( 570 - ($(date +%s) - T0) )) python3 -m pytest -q -p no:cacheprovider -m gpu -x tests/gpu/test_gpu.py tests/search tests/runtime tests/torch > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -5 $R/gpu_tests.log
