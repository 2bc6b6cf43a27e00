# device call (twelfth session, H100): stream-K against the tile schedule in the TMA family, the
# same tiles side by side (examples/family_sweep.py: each configuration verified and timed by the
# tuner's worker, cuDNN's best plan beside it), on the layers whose tiles leave a wave part-empty.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r; T0=$(date +%s)
export AUTOCONV_CACHE=/tmp/t/cache.sqlite3 CUDA_CACHE_PATH=/tmp/t/cc; rm -rf /tmp/t; mkdir -p /tmp/t
TF32='[{"BN":128,"CONSUMERS":2,"STAGES":6,"SCHEDULE":"cooperative","EPILOGUE":"direct"},{"BN":128,"CONSUMERS":2,"STAGES":6,"SCHEDULE":"stream_k","EPILOGUE":"direct"},{"BN":128,"CONSUMERS":1,"STAGES":8,"SCHEDULE":"cooperative","EPILOGUE":"direct"},{"BN":128,"CONSUMERS":1,"STAGES":8,"SCHEDULE":"stream_k","EPILOGUE":"direct"},{"BN":256,"CONSUMERS":2,"STAGES":4,"SCHEDULE":"cooperative","EPILOGUE":"direct"}]'
timeout 250 python3 examples/family_sweep.py examples/resnet50_tf32_nhwc.yaml --family implicit_gemm_wgmma_tma \
    --layers layer3.1.conv2,layer3.0.conv2,layer4.1.conv1,layer4.0.downsample.0,layer4.1.conv2 --configs "$TF32" --out /tmp/r/tf32_sweep.json > /tmp/r/tf32_sweep.log 2>&1
echo "tf32 sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -25 /tmp/r/tf32_sweep.log
BF16='[{"BN":128,"CONSUMERS":2,"STAGES":5,"SCHEDULE":"cooperative","EPILOGUE":"staged"},{"BN":128,"CONSUMERS":2,"STAGES":5,"SCHEDULE":"stream_k","EPILOGUE":"staged"},{"BN":128,"CONSUMERS":1,"STAGES":8,"SCHEDULE":"cooperative","EPILOGUE":"staged"},{"BN":128,"CONSUMERS":1,"STAGES":8,"SCHEDULE":"stream_k","EPILOGUE":"staged"}]'
timeout 200 python3 examples/family_sweep.py examples/resnet50_bf16.yaml --family implicit_gemm_wgmma_tma \
    --layers layer3.1.conv1,layer3.1.conv2,layer4.0.conv3,layer4.1.conv2 --configs "$BF16" --out /tmp/r/bf16_sweep.json > /tmp/r/bf16_sweep.log 2>&1
echo "bf16 sweep rc=$? at $(( $(date +%s) - T0 ))s" | tee -a /tmp/r/times.txt; tail -20 /tmp/r/bf16_sweep.log
cd /tmp && tar czf $OUT/r.tgz r
