"""How many candidates per second this host's cores compile, by number of compiler processes.

Renders a fixed random sample of ResNet-50 fp32 candidates (uniform over (layer, family), a
random valid point of each), then compiles the whole sample with P processes (spawned and warmed
before the clock starts) for each P given, in the order given; prints wall, CPU-s (sum over
compiles) and candidates/s. NVRTC keeps nothing between compiles, so the same sample serves each P.
    python3 capacity.py OUT.json SAMPLE P1 P2 ...
"""
import concurrent.futures
import json
import multiprocessing
import random
import sys
import time

from autoconv.gpu.compiler import compile_source
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.config import load_config
from autoconv.search.points import enumerate_points

FAMILIES = ("direct", "im2col_gemm", "implicit_gemm", "implicit_gemm_3xtf32", "implicit_gemm_mma",
            "implicit_gemm_wgmma")


def warm(_):
    from autoconv.gpu.device import require_nvrtc
    require_nvrtc()
    return 0


def job(args):
    source, name = args
    outcome = compile_source(source, H100.arch, name)
    return outcome.ok, outcome.seconds, outcome.cpu_seconds


def main():
    out, sample, levels = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
    config = load_config("examples/resnet50.yaml")
    rng = random.Random(1)
    points = {}
    sources = []
    while len(sources) < sample:
        item = rng.choice(config.problems)
        family = rng.choice(FAMILIES)
        key = (item.name, family)
        if key not in points:
            points[key] = enumerate_points(item.problem, [family], H100, config.workspace_limit_bytes)[family]
        if not points[key]:
            continue
        plan = get_family(family).plan(item.problem, rng.choice(points[key]), H100, config.workspace_limit_bytes)
        sources.append((plan.source, plan.name))
    print(f"{len(sources)} sources rendered", flush=True)
    results = []
    context = multiprocessing.get_context("spawn")
    for processes in levels:
        with concurrent.futures.ProcessPoolExecutor(processes, mp_context=context) as pool:
            list(pool.map(warm, range(processes * 2)))
            started = time.perf_counter()
            outcomes = list(pool.map(job, sources))
            wall = time.perf_counter() - started
        cpu = sum(o[2] for o in outcomes)
        seconds = sum(o[1] for o in outcomes)
        row = {"processes": processes, "wall_s": round(wall, 2), "cpu_s": round(cpu, 1),
               "compile_wall_s": round(seconds, 1), "ok": sum(o[0] for o in outcomes),
               "candidates_per_s": round(len(sources) / wall, 1),
               "cpu_s_per_candidate": round(cpu / len(sources), 3)}
        print(row, flush=True)
        results.append(row)
    json.dump(results, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
