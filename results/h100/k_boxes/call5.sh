# Twenty-fourth session, call 5 (nvidia-h100-x1): K tiles of two boxes (K_BOXES 2) in the TMA family.
#   1. the TMA family's GPU tests (every switch value, K_BOXES 1 and 2, on the family's shapes);
#   2. family_sweep: call 3's tuned winners (fitted widths, 67810c2; resnet50_n32_*/twentyfourth_session/) beside the same with K_BOXES 2
#      (and one or two fewer stages, which the doubled stages may need), every layer, tf32 and bf16;
#   3. tf32 and bf16 NHWC ResNet-50 at batch 32, each tuned from empty storage and cache, then benchmarked.
#   bash results/h100/k_boxes/call5.sh   (carry [".whl"])
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
rm -rf /tmp/o; mkdir -p /tmp/o; T0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > /tmp/o/env.txt 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emulator/test_wgmma_tma_family.py > /tmp/o/gpu_tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -3 /tmp/o/gpu_tests.log
for P in tf32_nhwc bf16; do
  timeout 150 python3 examples/family_sweep.py examples/resnet50_$P.yaml --family implicit_gemm_wgmma_tma \
    --base results/h100/resnet50_n32_$P/twentyfourth_session/results.json \
    --configs '[{}, {"K_BOXES": 2}, {"K_BOXES": 2, "STAGES": 3}, {"K_BOXES": 2, "STAGES": 4}]' \
    --out /tmp/o/sweep_$P.json > /tmp/o/sweep_$P.log 2>&1
  echo "sweep $P rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; tail -5 /tmp/o/sweep_$P.log
done
for P in tf32_nhwc bf16; do
  export AUTOCONV_CACHE=/tmp/t_$P/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t_$P/cc
  rm -rf /tmp/t_$P; mkdir -p /tmp/t_$P /tmp/o/$P
  timeout 120 python3 -m autoconv tune examples/resnet50_$P.yaml --storage /tmp/t_$P/studies.journal > /tmp/o/$P/tune.log 2>&1
  echo "$P tune rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep "tuning took" /tmp/o/$P/tune.log | cut -c1-200
  cp results/resnet50_$P/tune.json /tmp/o/$P/ 2>/dev/null
  timeout 130 python3 -m autoconv bench examples/resnet50_$P.yaml --no-tune --out /tmp/o/$P/results.json > /tmp/o/$P/bench.log 2>&1
  echo "$P bench rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/o/times.txt; grep -i "geomean" /tmp/o/$P/bench.log | tail -1
  gzip /tmp/o/$P/tune.log
done
tar czf $OUT/call5.tgz -C /tmp/o .
