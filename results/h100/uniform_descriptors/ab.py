"""The TMA family's operand descriptors, A/B on the same configurations: each layer's winner (family
and params from a bench's results.json) built as the templates have it now ("new": the warpgroup's
index through a shuffle, so warp-uniform, and each product's descriptors one add from stage 0's),
as before ("old": the index by division, make_descriptor per product), and with only the shuffle
("uniform"), each verified and timed by the backend, sides rotating, 5 rounds, median per side.
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

WARPGROUP = ("warpgroup = wg::warpgroup_index();", "warpgroup = tid / WARPGROUP_SIZE;")
DESCRIPTORS = [
    ("const unsigned long long a_tile = wg::advance(a_stage0, stage * A_BYTES);",
     "const unsigned a_tile = wg::shared_address(shared.A[stage]) + rows0 * ROW_BYTES;"),
    ("const unsigned long long b_tile = wg::advance(b_stage0, stage * B_BYTES);",
     "const unsigned b_tile = wg::shared_address(shared.B[stage]);"),
    ("wg::advance(a_tile, offset), wg::advance(b_tile, offset)",
     "wg::make_descriptor(a_tile + offset), wg::make_descriptor(b_tile + offset)"),
]


def replaced(plan, pairs):
    source = plan.source
    for new, old in pairs:
        assert source.count(new) == 1, f"{plan.name}: {new} not found once"
        source = source.replace(new, old)
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
            plans = {"new": plan, "old": replaced(plan, [WARPGROUP] + DESCRIPTORS),
                     "uniform": replaced(plan, DESCRIPTORS)}
            times = {side: [] for side in plans}
            for r in range(5):
                order = list(plans)[r % 3:] + list(plans)[:r % 3]
                for side in order:
                    result = backend.result(backend.submit(plans[side]))
                    assert result.ok, (item.name, side, result.reason)
                    times[side].append(result.time_ms)
            ms = {side: statistics.median(t) for side, t in times.items()}
            rows.append({"layer": item.name, "count": item.count, "ms": ms, "params": entry["params"],
                         "old_over_new": ms["old"] / ms["new"], "old_over_uniform": ms["old"] / ms["uniform"]})
            print(f"{item.name:30s} new {ms['new'] * 1e3:7.2f} us  uniform {ms['uniform'] * 1e3:7.2f} us  "
                  f"old {ms['old'] * 1e3:7.2f} us  old/new {ms['old'] / ms['new']:.3f}  "
                  f"old/uniform {ms['old'] / ms['uniform']:.3f}", flush=True)
    summary = {}
    for key in ("old_over_new", "old_over_uniform"):
        ratios = [r[key] for r in rows]
        summary[key] = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"geomean {key} {summary[key]:.4f}; range {min(ratios):.3f}-{max(ratios):.3f}", flush=True)
    json.dump({"rows": rows, "geomean": summary}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
