# Tune one config from empty storage, cache and CUDA cache, then benchmark it; sourced by device-call scripts.
#   tune_and_bench NAME CONFIG OUTDIR TUNE_TIMEOUT_S BENCH_TIMEOUT_S [extra tune args...]
# Writes OUTDIR/NAME/{tune.log.gz,tune.json,bench.log,results.json} and appends timings to OUTDIR/times.txt.
# T0 (the call's start, in seconds) must be set by the caller, or by device_preamble.
#   device_preamble OUTDIR: install the carried wheels ($WHEELS, default .whl/), put them and the tree on
#   PYTHONPATH, set T0, write OUTDIR/env.txt (GPU, driver, cores, CuPy, PyTorch, cuDNN).
# The device tool copies at most 64 MiB (tracked files, untracked ones not ignored, and what is
# carried): the tracked tree is ~57 MB (results/), all of .whl/ 11.3 MiB. A call that only tunes can
# carry the wheels without nvidia_cudnn_frontend (5.7 MB; only `autoconv bench` uses it) in another
# ignored folder and set WHEELS to it (thirty-fourth session): 6.2 MB. The tool refused 65.07 MB of
# tree, untracked results and those wheels, and took 64.63 MB (thirty-seventh session): keep new
# results' journals out of the tree (they stay in the history once committed and removed).

device_preamble() {
  local out=$1
  python3 -m pip install -q --no-index --no-deps --target /tmp/site "${WHEELS:-.whl}"/*.whl 2>/dev/null
  export PYTHONPATH=/tmp/site:$PWD
  rm -rf "$out"; mkdir -p "$out"; T0=$(date +%s)
  { nvidia-smi --query-gpu=name,driver_version --format=csv; nproc
    python3 -c "import cupy,torch;print(cupy.__version__,torch.__version__,torch.backends.cudnn.version())"
    git log -1 --format=%H 2>/dev/null; } > "$out/env.txt" 2>&1
}
tune_and_bench() {
  local name=$1 config=$2 out=$3 tune_s=$4 bench_s=$5; shift 5
  local work=/tmp/t_$name
  export AUTOCONV_CACHE=$work/cache.sqlite3 CUDA_CACHE_PATH=$work/cc
  rm -rf "$work"; mkdir -p "$work" "$out/$name"
  timeout "$tune_s" python3 -m autoconv tune "$config" --storage "$work/studies.journal" "$@" > "$out/$name/tune.log" 2>&1
  echo "$name tune rc=$? at $(( $(date +%s) - T0 ))s" | tee -a "$out/times.txt"
  grep "tuning took" "$out/$name/tune.log" | cut -c1-200
  local results_dir; results_dir=$(python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp "$results_dir/tune.json" "$out/$name/" 2>/dev/null
  timeout "$bench_s" python3 -m autoconv bench "$config" --no-tune --out "$out/$name/results.json" > "$out/$name/bench.log" 2>&1
  echo "$name bench rc=$? at $(( $(date +%s) - T0 ))s" | tee -a "$out/times.txt"
  grep -i "geomean" "$out/$name/bench.log" | tail -1
  gzip -f "$out/$name/tune.log"
}

# Tune one config with one autoconv tree into its own storage and cache, from empty or from another run's.
#   tune_run OUTDIR NAME TREE CONFIG HISTORY TIMEOUT_S [extra tune args...]
# TREE: the autoconv tree that runs (a patched copy, or $PWD); HISTORY: an earlier run's NAME whose
# storage and cache this one starts from, or - for empty. CuPy and CUDA caches always start empty.
# Writes OUTDIR/tune_NAME.{log,json}, OUTDIR/journal_NAME.gz; appends the wall time to OUTDIR/times.txt.
tune_run() {
  local out=$1 name=$2 tree=$3 config=$4 history=$5 timeout_s=$6; shift 6
  local work=/tmp/t_$name; rm -rf "$work"; mkdir -p "$work"
  [ "$history" != - ] && cp "/tmp/t_$history/s.journal" "/tmp/t_$history/c.sqlite3" "$work/"
  local start end rc; start=$(date +%s.%N)
  (cd "$tree" && PYTHONPATH="/tmp/site:$tree" CUPY_CACHE_DIR=$work/cupy CUDA_CACHE_PATH=$work/cc \
     timeout "$timeout_s" python3 -m autoconv tune "$config" --storage "$work/s.journal" --cache "$work/c.sqlite3" "$@" \
     > "$out/tune_$name.log" 2>&1)
  rc=$?; end=$(date +%s.%N)
  echo "tune $name rc=$rc wall=$(python3 -c "print(round($end-$start,2))") at $(( $(date +%s) - T0 ))s" | tee -a "$out/times.txt"
  grep -o "tuning took.*candidates" "$out/tune_$name.log" | tr -s ' ' | head -1
  local results_dir; results_dir=$(cd "$tree" && python3 -c "import sys; from autoconv.problems.config import load_config; print(load_config(sys.argv[1]).results)" "$config")
  cp "$results_dir/tune.json" "$out/tune_$name.json"
  gzip -c "$work/s.journal" > "$out/journal_$name.gz"
}

# Re-time side by side, in one process, the winners of runs made by tune_run (their caches), layer by
# layer (../twentyeighth/compare_caches.py: relative to the first label's).
#   compare_runs OUTDIR CONFIG NAME TIMEOUT_S LABEL...
# A run that left no cache is left out. Writes OUTDIR/NAME.{json,log}; appends to OUTDIR/times.txt.
compare_runs() {
  local out=$1 config=$2 name=$3 timeout_s=$4; shift 4
  local caches=() label
  for label in "$@"; do [ -f "/tmp/t_$label/c.sqlite3" ] && caches+=("$label=/tmp/t_$label/c.sqlite3"); done
  timeout "$timeout_s" python3 results/h100/twentyeighth/compare_caches.py "$config" "$out/$name.json" "${caches[@]}" \
    > "$out/$name.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 ))s" | tee -a "$out/times.txt"
  grep geomean "$out/$name.log"
}

# A copy of this tree's runnable parts with one file edited, for runs against the tree (tune_run's TREE).
#   variant_tree DEST FILE SED_EXPR
# Copies autoconv, examples, pyproject.toml, search_spaces and templates to DEST and applies SED_EXPR
# to DEST/FILE; fails (and says so) where that changed nothing.
variant_tree() {
  local dest=$1 file=$2 expr=$3
  rm -rf "$dest"; mkdir -p "$dest" && cp -r autoconv examples pyproject.toml search_spaces templates "$dest"/
  sed -i "$expr" "$dest/$file"
  if cmp -s "$file" "$dest/$file"; then echo "variant_tree: '$expr' changed nothing in $file" >&2; return 1; fi
}

# tune_run in a call's sequence of runs: skipped (and "skip NAME" in times.txt) once more than LIMIT_S
# of the call have passed, so that the comparison after the runs keeps its time. A run made is appended
# to the caller's RUNS array, and OUTDIR is packed into $OUT/r.tgz after it (what is done so far,
# should the call be cut).
#   tune_in_turn LIMIT_S OUTDIR NAME TREE CONFIG TIMEOUT_S [extra tune args...]
tune_in_turn() {
  local limit_s=$1 out=$2 name=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt "$limit_s" ]; then echo "skip $name" | tee -a "$out/times.txt"; return; fi
  tune_run "$out" "$name" "$@"; RUNS+=("$name")
  (cd "$(dirname "$out")" && tar czf "$OUT/r.tgz" "$(basename "$out")")
}

# The runs' winners re-timed side by side (compare_runs, into OUTDIR/compare.*), each run against the
# fastest per layer (../thirtyeighth/per_layer.py, layers over 1.04x listed: OUTDIR/per_layer.txt), and
# their journals' split and runner-up steps counted (../thirtyeighth/split_polish.py: split_polish.txt).
#   compare_and_count OUTDIR CONFIG TIMEOUT_S LABEL...
compare_and_count() {
  local out=$1 config=$2 timeout_s=$3; shift 3
  compare_runs "$out" "$config" compare "$timeout_s" "$@"
  python3 results/h100/thirtyeighth/per_layer.py "$out/compare.json" 1.04 > "$out/per_layer.txt" 2>&1
  head -12 "$out/per_layer.txt"
  python3 results/h100/thirtyeighth/split_polish.py "$out"/journal_*.gz > "$out/split_polish.txt" 2>&1
  cut -c1-300 "$out/split_polish.txt"
}
