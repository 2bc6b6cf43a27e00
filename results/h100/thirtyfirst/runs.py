"""Each VGG-16 run of calls 1-4 (its tune.json): wall time, candidates, candidates per compile
CPU-second, and the workers' milestones (seconds from the run's start: the earliest and latest of
the three workers); then, per call, the mean of each kind of run and the ratios.
    python3 results/h100/thirtyfirst/runs.py > results/h100/thirtyfirst/runs.txt"""
import collections
import json
import pathlib
import re
import statistics

HERE = pathlib.Path(__file__).parent
MILESTONES = ("process", "backend", "storage", "first_submit", "last_result", "tuned")

for call in sorted(HERE.glob("call[0-9]")):
    print(f"# {call.name}")
    print(f"{'run':9s} {'wall_s':>6s} {'cand':>5s} {'c/cpu-s':>7s}  " + "  ".join(f"{m:>12s}" for m in MILESTONES))
    kinds = collections.defaultdict(list)
    for path in sorted(call.glob("tune_*.json"), key=lambda p: (re.sub(r"\d+$", "", p.stem), p.stem)):
        name = path.stem.removeprefix("tune_")
        if name in ("rn50",):
            continue
        run = json.loads(path.read_text())
        spans = ["{:5.2f}-{:5.2f}".format(min(w["milestones_s"][m] for w in run["workers"]),
                                          max(w["milestones_s"][m] for w in run["workers"])) for m in MILESTONES]
        print(f"{name:9s} {run['wall_s']:6.2f} {run['candidates']:5d} {run['candidates_per_compile_cpu_s']:7.2f}  "
              + "  ".join(f"{s:>12s}" for s in spans))
        kinds[re.sub(r"\d+$", "", name)].append(run["wall_s"])
    means = {kind: statistics.mean(walls) for kind, walls in kinds.items()}
    print("means: " + ", ".join(f"{kind} {mean:.2f} s (n={len(kinds[kind])})" for kind, mean in sorted(means.items())))
    for tr, plain in [("trN", "plainN"), ("trO", "plainO"), ("tr", "plain"), ("trP", "plain")]:
        if tr in means and plain in means:
            print(f"  {plain}/{tr}: {means[plain] / means[tr]:.2f}x")
    print()
