"""What a GPU worker holds its GPU's lock for besides candidates: preparing a problem's buffers
(verification inputs, float64 reference and tolerance, timing sets). Times each part for each
ResNet-50 problem, twice (the search's seed, then the finals' fresh seed), in one process.
    python3 prepare_cost.py OUT.json
"""
import json
import sys
import time

import cupy

from autoconv.gpu.device import read_device
from autoconv.gpu.worker import WorkerOptions, reference_and_tolerance, timing_sets, verification_inputs
from autoconv.problems.config import load_config
from autoconv.search.tuner import REVERIFY_SEED_OFFSET


def timed(call):
    cupy.cuda.get_current_stream().synchronize()
    started = time.perf_counter()
    value = call()
    cupy.cuda.get_current_stream().synchronize()
    return value, time.perf_counter() - started


def main():
    limits = read_device()[0]
    config = load_config("examples/resnet50.yaml")
    max_sets = WorkerOptions(device_id=0).max_buffer_sets
    rows = []
    for seed in (config.seed, config.seed + REVERIFY_SEED_OFFSET):
        for item in config.problems:
            inputs, inputs_s = timed(lambda: verification_inputs(item.problem, seed))
            _, reference_s = timed(lambda: reference_and_tolerance(item.problem, *inputs))
            sets, sets_s = timed(lambda: timing_sets(item.problem, seed, limits.l2_bytes, max_sets))
            rows.append({"problem": item.name, "seed": seed, "inputs_s": round(inputs_s, 4),
                         "reference_s": round(reference_s, 4), "timing_sets_s": round(sets_s, 4), "sets": len(sets)})
            print(rows[-1], flush=True)
            del inputs, sets
            cupy.get_default_memory_pool().free_all_blocks()
    for seed in (config.seed, config.seed + REVERIFY_SEED_OFFSET):
        mine = [r for r in rows if r["seed"] == seed]
        print(f"seed {seed}: inputs {sum(r['inputs_s'] for r in mine):.2f} s, reference "
              f"{sum(r['reference_s'] for r in mine):.2f} s, timing sets {sum(r['timing_sets_s'] for r in mine):.2f} s "
              f"over {len(mine)} problems")
    json.dump(rows, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
