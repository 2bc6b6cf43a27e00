# device call 4 (eighteenth session, after call 3: the finals submitted together, the best's build with constants prepared during the search): tuning with implicit_gemm_wgmma ranked in its run-time-size
# build (one compilation per configuration and filter size, shared by the compile service), the
# winners rebuilt with constants, against HEAD dee5798 (.probe/old18). GPU tests first, then
# ResNet-50 from empty caches new old old new, then VGG-16 from empty new old.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
R=$OUT/r; mkdir -p $R; T0=$(date +%s); NEW=$PWD; OLD=$PWD/.probe/old18
export PYTHONPATH=/tmp/site:$NEW
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu.py -k "one_cubin or backend or tune_caches or second_tune or prepared" tests/search/test_killed_tune.py > $R/tests.log 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt; tail -1 $R/tests.log
tune() {  # name code-root config results-folder
  [ $(( $(date +%s) - T0 )) -gt 500 ] && { echo "skip $1" | tee -a $R/times.txt; return; }
  rm -rf /tmp/t_$1; mkdir -p /tmp/t_$1; s=$(date +%s.%N)
  (cd $2 && CUPY_CACHE_DIR=/tmp/t_$1/cupy CUDA_CACHE_PATH=/tmp/t_$1/cc PYTHONPATH=/tmp/site:$2 timeout 150 python3 -m autoconv tune $3 --storage /tmp/t_$1/s.journal --cache /tmp/t_$1/c.sqlite3 > $R/tune_$1.log 2>&1)
  echo "tune $1 rc=$? start=$s end=$(date +%s.%N) at $(( $(date +%s) - T0 ))s" | tee -a $R/times.txt
  cp $2/$4/tune.json $R/tune_$1.json
  gzip -c /tmp/t_$1/s.journal > $R/journal_$1.gz
}
tune rn50_new1 $NEW examples/resnet50.yaml results/resnet50
tune rn50_old1 $OLD examples/resnet50.yaml results/resnet50
tune rn50_old2 $OLD examples/resnet50.yaml results/resnet50
tune rn50_new2 $NEW examples/resnet50.yaml results/resnet50
tune vgg_new1 $NEW examples/vgg16.yaml results/vgg16
tune vgg_old1 $OLD examples/vgg16.yaml results/vgg16
cd $OUT && tar czf r.tgz r && rm -rf r
