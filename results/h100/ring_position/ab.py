"""The TMA family's consumers stepping a ring position instead of dividing a K-tile count by STAGES,
A/B on the same configurations: each layer's winner (family and params from a bench's
results.json) built as the templates have it ("ring") and with the division back ("divide"), each
verified and timed by the backend, alternating, 5 rounds, median per side.
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

RING_TO_DIVISION = [  # (as the template has it, as before), in this order
    ("    RingPosition ring;   // this K tile's stage, in the producer's order\n"
     "    int previous_stage = 0, position = 0, own_tiles = 0;\n",
     "    int iteration = 0, position = 0, own_tiles = 0;\n"),
    ("            ring.skip(t.k_tiles);\n", "            iteration += t.k_tiles;\n"),
    ("        for (int k = 0; k < t.k_tiles; ++k, ring.step()) {\n"
     "            const int stage = ring.stage;\n"
     "            mbarrier::wait(&shared.full[stage], ring.phase);\n",
     "        for (int k = 0; k < t.k_tiles; ++k, ++iteration) {\n"
     "            const int stage = iteration % STAGES;\n"
     "            mbarrier::wait(&shared.full[stage], (iteration / STAGES) & 1);\n"),
    ("                mbarrier::arrive(&shared.empty[previous_stage]);\n            previous_stage = stage;\n        }\n",
     "                mbarrier::arrive(&shared.empty[(iteration - 1) % STAGES]);\n        }\n"),
    ("            mbarrier::arrive(&shared.empty[previous_stage]);\n",
     "            mbarrier::arrive(&shared.empty[(iteration - 1) % STAGES]);\n"),
]


def with_division(plan):
    source = plan.source
    for new, old in RING_TO_DIVISION:
        assert source.count(new) == 1, f"{plan.name}: {new!r} not found once"
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
            plans = {"ring": plan, "divide": with_division(plan)}
            times = {side: [] for side in plans}
            for r in range(5):
                for side in (list(plans) if r % 2 == 0 else list(plans)[::-1]):
                    result = backend.result(backend.submit(plans[side]))
                    assert result.ok, (item.name, side, result.reason)
                    times[side].append(result.time_ms)
            ms = {side: statistics.median(t) for side, t in times.items()}
            rows.append({"layer": item.name, "count": item.count, "ms": ms, "params": entry["params"],
                         "divide_over_ring": ms["divide"] / ms["ring"]})
            print(f"{item.name:30s} ring {ms['ring'] * 1e3:7.2f} us  divide {ms['divide'] * 1e3:7.2f} us  "
                  f"divide/ring {ms['divide'] / ms['ring']:.3f}", flush=True)
    ratios = [r["divide_over_ring"] for r in rows]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geomean divide/ring {geomean:.4f}; range {min(ratios):.3f}-{max(ratios):.3f}", flush=True)
    json.dump({"rows": rows, "geomean_divide_over_ring": geomean}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
