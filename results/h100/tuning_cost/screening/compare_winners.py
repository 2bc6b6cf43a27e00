"""Re-time, in one process, the committed run's winners (results.json: family + params) against a
new cache's winners, per layer alternating, 5 rounds, median; each verified by evaluate first.
    python3 fast_compare.py CONFIG RESULTS_JSON CACHE OUT.json
"""
import json, math, statistics, sys
from autoconv.cache.winners import WinnerCache
from autoconv.problems.config import load_config
from autoconv.kernels.families import get_family
from autoconv.gpu.backend import CupyBackend


def main():
    config_file, results_file, cache_file, out = sys.argv[1:5]
    config = load_config(config_file)
    committed = {p["spec"]: p for p in json.load(open(results_file))["problems"]}
    rows = []
    with CupyBackend(0, seed=0) as backend, WinnerCache(cache_file) as cache:
        entries = {e.key.problem_key: e for e in cache.entries()}
        for item in config.problems:
            problem = item.problem
            old = committed[problem.spec()]
            new = entries[problem.key()]
            plans = []
            try:
                for family, params in ((old["family"], old["params"]), (new.family, dict(new.config))):
                    plans.append(get_family(family).plan(problem, dict(params), backend.device, config.workspace_limit_bytes))
            except Exception as err:
                print(f"{item.name:28s} skipped: {err}", flush=True)
                continue
            times = [[], []]
            for _ in range(5):
                for side, plan in enumerate(plans):
                    result = backend.result(backend.submit(plan))
                    assert result.ok, (item.name, side, result.reason)
                    times[side].append(result.time_ms)
            ms = [statistics.median(t) for t in times]
            rows.append({"layer": item.name, "committed_ms": ms[0], "new_ms": ms[1], "committed_kernel": plans[0].name,
                         "new_kernel": plans[1].name, "new_trials": new.trials, "new_over_committed": ms[1] / ms[0]})
            print(f"{item.name:28s} committed {ms[0]:.4f}  new {ms[1]:.4f} ({new.trials} trials)  new/committed {ms[1]/ms[0]:.3f}", flush=True)
    ratios = [r["new_over_committed"] for r in rows]
    print(f"geomean new/committed {math.exp(statistics.mean(map(math.log, ratios))):.3f}; worst {max(ratios):.3f}")
    json.dump(rows, open(out, "w"), indent=1)


if __name__ == '__main__':
    main()
