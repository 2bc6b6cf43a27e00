"""The cp.async wgmma families' warp-uniform warpgroup index, A/B on the same configurations: each
layer's winner of implicit_gemm_wgmma or implicit_gemm_wgmma_f16 (family and params from a bench's
results.json) built as the templates have it now ("new": the warpgroup's index read through a
shuffle) and as before ("old": by division), each verified and timed by the backend, alternating,
5 rounds, median per side. Winners of other families are skipped.
    python3 ab_families.py CONFIG RESULTS_JSON OUT.json
"""
import dataclasses
import json
import math
import statistics
import sys

from autoconv.gpu.backend import CupyBackend
from autoconv.kernels.families import get_family
from autoconv.problems.config import load_config

NAMESPACE = {"implicit_gemm_wgmma": "wgmma_tf32", "implicit_gemm_wgmma_f16": "wgmma_f16"}


def old_plan(plan, family):
    new = f"const int warpgroup = {NAMESPACE[family]}::warpgroup_index(),"
    assert plan.source.count(new) == 1, f"{plan.name}: {new} not found once"
    return dataclasses.replace(plan, source=plan.source.replace(new, "const int warpgroup = tid / WARPGROUP_SIZE,"))


def main():
    config_file, results_file, out = sys.argv[1:4]
    config = load_config(config_file)
    committed = {p["spec"]: p for p in json.load(open(results_file))["problems"]}
    rows = []
    with CupyBackend(0, seed=0) as backend:
        for item in config.problems:
            problem = item.problem
            entry = committed[problem.spec()]
            if entry["family"] not in NAMESPACE:
                continue
            plan = get_family(entry["family"]).plan(problem, dict(entry["params"]), backend.device,
                                                    config.workspace_limit_bytes)
            plans = {"new": plan, "old": old_plan(plan, entry["family"])}
            times = {side: [] for side in plans}
            for r in range(5):
                for side in (list(plans) if r % 2 == 0 else list(plans)[::-1]):
                    result = backend.result(backend.submit(plans[side]))
                    assert result.ok, (item.name, side, result.reason)
                    times[side].append(result.time_ms)
            ms = {side: statistics.median(t) for side, t in times.items()}
            rows.append({"layer": item.name, "family": entry["family"], "ms": ms, "params": entry["params"],
                         "old_over_new": ms["old"] / ms["new"]})
            print(f"{item.name:30s} {entry['family']:24s} new {ms['new'] * 1e3:7.2f} us  old {ms['old'] * 1e3:7.2f} us  "
                  f"old/new {ms['old'] / ms['new']:.3f}", flush=True)
    ratios = [r["old_over_new"] for r in rows]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geomean old/new {geomean:.4f} over {len(rows)}; range {min(ratios):.3f}-{max(ratios):.3f}", flush=True)
    json.dump({"rows": rows, "geomean_old_over_new": geomean}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
