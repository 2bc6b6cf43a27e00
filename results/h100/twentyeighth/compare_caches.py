"""Re-time, in one process, the winners of several tuning runs' caches, layer by layer: each run's
winner of a layer timed in turn, ROUNDS rounds, the median per winner; every winner verified on the
way (the backend's evaluation checks it against the reference).
    python3 compare_caches.py CONFIG OUT.json LABEL=CACHE [LABEL=CACHE ...]
Prints each layer's times and each run's geometric mean over the layers relative to the first run's.
"""
import json
import math
import statistics
import sys

from autoconv.cache.winners import WinnerCache
from autoconv.gpu.backend import CupyBackend
from autoconv.kernels.families import get_family
from autoconv.problems.config import load_config

ROUNDS = 5


def main():
    config_file, out = sys.argv[1:3]
    runs = [arg.split("=", 1) for arg in sys.argv[3:]]
    config = load_config(config_file)
    entries = {}
    for label, path in runs:
        with WinnerCache(path) as cache:
            entries[label] = {e.key.problem_key: e for e in cache.entries()}
    rows = []
    with CupyBackend(0, seed=0) as backend:
        for item in config.problems:
            problem = item.problem
            plans = {label: get_family(found[problem.key()].family).plan(
                problem, dict(found[problem.key()].config), backend.device, config.workspace_limit_bytes)
                for label, found in entries.items() if problem.key() in found}
            times = {label: [] for label in plans}
            for _ in range(ROUNDS):
                for label, plan in plans.items():
                    result = backend.result(backend.submit(plan))
                    assert result.ok, (item.name, label, result.reason)
                    times[label].append(result.time_ms)
            ms = {label: statistics.median(t) for label, t in times.items()}
            rows.append({"layer": item.name, "ms": ms, "kernels": {label: plan.name for label, plan in plans.items()},
                         "trials": {label: entries[label][problem.key()].trials for label in plans}})
            print(f"{item.name:28s} " + "  ".join(f"{label} {value:.4f}" for label, value in ms.items()), flush=True)
    first = runs[0][0]
    for label, _ in runs:
        ratios = [row["ms"][label] / row["ms"][first] for row in rows if label in row["ms"] and first in row["ms"]]
        print(f"{label}: geomean over {first} {math.exp(statistics.mean(map(math.log, ratios))):.4f}, "
              f"worst layer {max(ratios):.3f}, best {min(ratios):.3f}")
    json.dump(rows, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
