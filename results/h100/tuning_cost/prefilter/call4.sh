# device call 4: is the model's set-up slow under a loaded host (BLAS threads)? 16 busy processes, default threads vs 1.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import numpy; numpy.show_config()" 2>&1 | grep -i -A3 "blas\|lapack" | head -20
python3 -c "import threadpoolctl; print('threadpoolctl', threadpoolctl.__version__)" 2>&1 | tail -1
echo idle default; python3 .probe/s16/blas_probe.py .probe/s16/rn50.journal
for i in $(seq 16); do ( while :; do :; done ) & done
sleep 1
echo loaded default; timeout 120 python3 .probe/s16/blas_probe.py .probe/s16/rn50.journal
echo loaded OPENBLAS_NUM_THREADS=1; OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 timeout 120 python3 .probe/s16/blas_probe.py .probe/s16/rn50.journal
kill $(jobs -p)
