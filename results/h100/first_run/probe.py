"""Where a fresh machine's first evaluations spend their time (issue 16).

One process does what a tuning worker does (autoconv.gpu.worker.WorkerSession): its warm-up,
then for each problem the buffers and reference (set_problem) and two evaluations of the
implicit_gemm family's default kernel (compiled here first, outside the timings). It prints
the seconds of each step and how many files CuPy's kernel cache ($CUPY_CACHE_DIR) gained, and
a cProfile of any evaluation that took more than PROFILE_ABOVE_S.

    CUPY_CACHE_DIR=<empty dir> python3 results/h100/first_run/probe.py [vgg16|resnet50 ...]
"""

import cProfile
import io
import os
import pstats
import sys
import time

from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.worker import WorkerOptions, WorkerSession
from autoconv.kernels.families import get_family
from autoconv.problems.models import MODEL_PRESETS

PROFILE_ABOVE_S = 0.5
BATCH = {"vgg16": 8, "resnet50": 32}


def cache_files() -> int:
    root = os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))
    return sum(len(files) for _, _, files in os.walk(root))


def timed(what, action):
    before, started = cache_files(), time.perf_counter()
    profile = cProfile.Profile()
    profile.enable()
    value = action()
    profile.disable()
    seconds = time.perf_counter() - started
    print(f"  {what}: {seconds:.3f} s, CuPy cache +{cache_files() - before} files", flush=True)
    if seconds > PROFILE_ABOVE_S:
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(18)
        print("\n".join("    " + line for line in text.getvalue().splitlines()[6:30]), flush=True)
    return value


def main(models):
    limits, _ = read_device(0)
    session = WorkerSession(limits, WorkerOptions())
    print(f"{limits.name}; CuPy cache starts with {cache_files()} files", flush=True)
    timed("warm_up", session.warm_up)
    family = get_family("implicit_gemm")
    for model in models:
        for named in MODEL_PRESETS[model](BATCH[model]):
            problem = named.problem
            print(f"{model} {named.name} {problem.key()}", flush=True)
            timed("set_problem", lambda: session.set_problem(problem, 1))
            plan = family.plan(problem, device=limits)
            compiled = compile_source(plan.source, limits.arch, plan.name)
            for attempt in (1, 2):
                result, _ = timed(f"evaluate {attempt}", lambda: session.evaluate(plan, compiled.cubin, 0.0, True))
                print(f"    -> {result.status.value} run_s {result.run_s:.3f} time_ms {result.time_ms}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["vgg16", "resnet50"])
