# device call 2 (seventeenth session): the working tree (abandoned candidates queued again, a cut-short
# study resumed, start-up overlapped: GPU worker ready before its warm-up, storage loaded beside it,
# compile processes started first) against HEAD 9a4f013 (.probe/old17). Tests first, then VGG-16 from
# empty caches new old old new, a ResNet-50 history (new), VGG-16 with it new old old new.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R; T0=$(date +%s); NEW=$PWD; OLD=$PWD/.probe/old17
{ nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"; } > $R/env.txt 2>&1
export PYTHONPATH=/tmp/site:$NEW
K=tests/search/test_killed_tune.py::test_tune_on_the_gpu_killed_mid_search_resumes_and_leaves_no_process
for i in 1 2 3 4; do
  timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu $K --basetemp=/tmp/kt_$i > $R/kt_$i.log 2>&1
  echo "killed $i rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  [ -f /tmp/kt_$i/*/state/studies.journal ] 2>/dev/null; find /tmp/kt_$i -name studies.journal -exec cp {} $R/kt_${i}_studies.journal \;
done
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu.py tests/gpu/test_compile_service.py -k "backend or cache or worker or compile_service" > $R/tests.log 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/tests.log
tune() {  # name code-root config results-folder history-dir
  [ $(( $(date +%s) - T0 )) -gt 545 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  [ -n "$5" ] && cp $5/c.sqlite3 $5/s.journal /tmp/t_$1/
  (cd $2 && CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc PYTHONPATH=/tmp/site:$2 timeout 200 python3 -m autoconv tune $3 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $2/$4/tune.json $R/tune_$1.json
  [ -z "$5" ] && [ $3 = examples/vgg16.yaml ] && gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune vgg_new1 $NEW examples/vgg16.yaml results/vgg16 ""
tune vgg_old1 $OLD examples/vgg16.yaml results/vgg16 ""
tune vgg_old2 $OLD examples/vgg16.yaml results/vgg16 ""
tune vgg_new2 $NEW examples/vgg16.yaml results/vgg16 ""
tune rn50_new $NEW examples/resnet50.yaml results/resnet50 ""
mkdir -p /tmp/hist && cp /tmp/t_rn50_new/c.sqlite3 /tmp/t_rn50_new/s.journal /tmp/hist/
tune hist_new1 $NEW examples/vgg16.yaml results/vgg16 /tmp/hist
tune hist_old1 $OLD examples/vgg16.yaml results/vgg16 /tmp/hist
tune hist_old2 $OLD examples/vgg16.yaml results/vgg16 /tmp/hist
tune hist_new2 $NEW examples/vgg16.yaml results/vgg16 /tmp/hist
cd $OUT && tar czf r.tgz r && rm -rf r
