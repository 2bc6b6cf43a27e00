"""The TMA family's tensor-map prefetch, A/B on the same configurations: each layer's winner (family
and params from a bench's results.json) built as the templates have it (prefetch) and with the
two `tma::prefetch` calls taken out of the same source (no prefetch), each verified and timed by
the backend, alternating, 5 rounds, median per side.
    python3 ab.py CONFIG RESULTS_JSON OUT.json
"""
import dataclasses
import json
import math
import statistics
import sys

from autoconv.gpu.backend import CupyBackend
from autoconv.kernels.families import get_family
from autoconv.problems.config import load_config

PREFETCH_LINES = ("        tma::prefetch(&x_map);\n", "        tma::prefetch(&w_map);\n")


def without_prefetch(plan):
    source = plan.source
    for line in PREFETCH_LINES:
        assert source.count(line) == 1, f"{plan.name}: {line.strip()} not found once"
        source = source.replace(line, "")
    return dataclasses.replace(plan, source=source)


def main():
    config_file, results_file, out = sys.argv[1:4]
    config = load_config(config_file)
    committed = {p["spec"]: p for p in json.load(open(results_file))["problems"]}
    rows = []
    with CupyBackend(0, seed=0) as backend:
        for item in config.problems:
            problem = item.problem
            entry = committed[problem.spec()]
            if entry["family"] != "implicit_gemm_wgmma_tma":
                print(f"{item.name:30s} skipped: {entry['family']}", flush=True)
                continue
            plan = get_family(entry["family"]).plan(problem, dict(entry["params"]), backend.device,
                                                    config.workspace_limit_bytes)
            plans = {"prefetch": plan, "none": without_prefetch(plan)}
            times = {side: [] for side in plans}
            for r in range(5):
                for side in (list(plans) if r % 2 == 0 else list(plans)[::-1]):
                    result = backend.result(backend.submit(plans[side]))
                    assert result.ok, (item.name, side, result.reason)
                    times[side].append(result.time_ms)
            ms = {side: statistics.median(t) for side, t in times.items()}
            rows.append({"layer": item.name, "count": item.count, "prefetch_ms": ms["prefetch"], "none_ms": ms["none"],
                         "none_over_prefetch": ms["none"] / ms["prefetch"], "params": entry["params"]})
            print(f"{item.name:30s} prefetch {ms['prefetch'] * 1e3:7.2f} us  none {ms['none'] * 1e3:7.2f} us  "
                  f"none/prefetch {ms['none'] / ms['prefetch']:.3f}", flush=True)
    ratios = [r["none_over_prefetch"] for r in rows]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geomean none/prefetch {geomean:.4f}; range {min(ratios):.3f}-{max(ratios):.3f}", flush=True)
    json.dump({"rows": rows, "geomean_none_over_prefetch": geomean}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
