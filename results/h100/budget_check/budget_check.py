"""Issue 6's budget check, in two steps that fit the device's 10-minute calls:

    python3 budget_check.py tune CONFIG LAYERS FACTOR FOLDER
        tunes LAYERS (comma-separated names of CONFIG's problems) from empty storage with
        FACTOR times CONFIG's budget (trials, seconds and patience), all of CONFIG's
        families; the winners go to FOLDER/cache.sqlite3
    python3 budget_check.py compare CONFIG LAYERS CACHE_A CACHE_B OUT.json
        re-times the winner of each layer in both caches side by side in one process,
        alternating, 5 rounds, median (each verified first), and writes the rows to OUT.json

The 1x winners can be those of a full `autoconv tune CONFIG` (its cache), so only the larger
budget is tuned here.
"""
import dataclasses
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml


def tune(config_file: str, layers: str, factor: float, folder: str) -> None:
    from autoconv.problems.config import load_config

    config = load_config(config_file)
    wanted = layers.split(",")
    chosen = [p for p in config.problems if p.name in wanted]
    assert len(chosen) == len(wanted), f"not all of {wanted} are in {config_file}"
    budget = config.budget
    folder_path = Path(folder)
    folder_path.mkdir(parents=True, exist_ok=True)
    document = {
        "problems": [{"name": p.name, "spec": p.problem.spec()} for p in chosen],
        "budget": {"trials": int(budget.trials * factor), "seconds": budget.seconds * factor,
                   "patience": int(budget.patience * factor)},
        "seed": config.seed, "storage": "studies.journal", "cache": "cache.sqlite3", "results": "results",
        "workspace_limit_mb": config.workspace_limit_bytes // 2**20,
    }
    (folder_path / "config.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "autoconv", "tune", "config.yaml"], cwd=folder_path,
                          capture_output=True, text=True)
    (folder_path / "tune.log").write_text(done.stdout + done.stderr)
    print(f"{factor:g}x budget {document['budget']}: tune rc={done.returncode} in "
          f"{time.monotonic() - started:.1f} s", flush=True)


def compare(config_file: str, layers: str, cache_a: str, cache_b: str, out: str) -> None:
    from autoconv.cache.winners import WinnerCache
    from autoconv.problems.config import load_config
    from autoconv.kernels.families import get_family
    from autoconv.gpu.backend import CupyBackend

    config = load_config(config_file)
    wanted = layers.split(",")
    rows = []
    with CupyBackend(0, seed=0) as backend, WinnerCache(cache_a) as a, WinnerCache(cache_b) as b:
        entries = [{e.key.problem_key: e for e in cache.entries()} for cache in (a, b)]
        for item in (p for p in config.problems if p.name in wanted):
            problem = item.problem
            plans = [get_family(e[problem.key()].family).plan(problem, dict(e[problem.key()].config), backend.device,
                                                               config.workspace_limit_bytes) for e in entries]
            times = [[], []]
            for _ in range(5):  # alternate, so drift hits both
                for side, plan in enumerate(plans):
                    result = backend.evaluate(plan)
                    assert result.ok, result.reason
                    times[side].append(result.time_ms)
            ms = [statistics.median(t) for t in times]
            trials = [e[problem.key()].trials for e in entries]
            rows.append({"layer": item.name, "spec": problem.spec(), "a_ms": ms[0], "b_ms": ms[1],
                         "a_kernel": plans[0].name, "b_kernel": plans[1].name, "a_trials": trials[0],
                         "b_trials": trials[1], "a_over_b": ms[0] / ms[1]})
            print(f"{item.name:28s} A {ms[0]:.4f} ms ({trials[0]} trials)  B {ms[1]:.4f} ms ({trials[1]} trials)  "
                  f"A/B {ms[0] / ms[1]:.3f}", flush=True)
    ratios = [r["a_over_b"] for r in rows]
    print(f"geomean A/B {math.exp(statistics.mean(map(math.log, ratios))):.3f}; worst {max(ratios):.3f}")
    Path(out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    if command == "tune":
        tune(arguments[0], arguments[1], float(arguments[2]), arguments[3])
    elif command == "compare":
        compare(*arguments)
    else:
        raise SystemExit(__doc__)
