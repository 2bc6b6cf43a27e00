#!/usr/bin/env bash
# Issue 8 evidence: tune examples/resnet50.yaml from empty storage and cache on one GPU,
# then on all GPUs, same budget; run from the .head snapshot.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD/.head
cd .head
echo "commit $(cat COMMIT)"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
python3 -c "import cupy; print('cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"
for run in one all; do
  mkdir -p /tmp/$run
  cp examples/resnet50.yaml /tmp/$run/resnet50.yaml
  sed -i 's#^storage: .*#storage: studies.journal#; s#^results: .*#results: results#' /tmp/$run/resnet50.yaml
  echo "cache: cache.sqlite" >> /tmp/$run/resnet50.yaml
done
echo "== one GPU: autoconv tune resnet50.yaml --gpus 0"
( cd /tmp/one && /usr/bin/time -f "wall %e s" python3 -m autoconv tune resnet50.yaml --gpus 0 > $OUT/one.stdout 2> $OUT/one.stderr ); echo "rc=$?"; tail -1 $OUT/one.stderr
echo "== two GPUs: autoconv tune resnet50.yaml --gpus all"
( cd /tmp/all && /usr/bin/time -f "wall %e s" python3 -m autoconv tune resnet50.yaml --gpus all > $OUT/all.stdout 2> $OUT/all.stderr ); echo "rc=$?"; tail -1 $OUT/all.stderr
cp /tmp/one/results/tune.json $OUT/one_tune.json; cp /tmp/all/results/tune.json $OUT/all_tune.json
python3 - <<'PY'
import json, math, os
out = os.environ["OUT"]
one = json.load(open(f"{out}/one_tune.json")); two = json.load(open(f"{out}/all_tune.json"))
print(f"wall: one GPU {one['wall_s']:.1f} s, {len(two['gpus'])} GPUs {two['wall_s']:.1f} s, speedup {one['wall_s']/two['wall_s']:.2f}x")
ratios = []
for a, b in zip(one["problems"], two["problems"]):
    r = b["time_ms"] / a["time_ms"]; ratios.append(r)
    print(f"{a['name']:28s} one {a['time_ms']:.4f} ms {a['family']:22s} ({a['trials_run']} trials)  all {b['time_ms']:.4f} ms {b['family']:22s} ({b['trials_run']} trials, {b['workers']} workers)  all/one {r:.3f}")
print(f"geomean best-time ratio (all/one): {math.exp(sum(map(math.log, ratios))/len(ratios)):.3f}")
print("workers:", two.get("workers"))
PY
