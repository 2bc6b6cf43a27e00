"""NVRTC compile throughput against the number of compiling processes, on this host.

    python examples/compile_throughput.py examples/vgg16.yaml --processes 1,2,4,8,15

The tuner compiles its candidates in a pool of processes sized from ``os.cpu_count()``. Whether
that many processes compile that many times faster depends on the cores behind the count
(shared virtual CPUs, a CPU quota): this measures it. It renders candidates (per problem and
family, the default and then random valid configurations, as ``autoconv tune --dry-run``
picks them), then compiles the same list with a pool of P spawned processes for each P, with the
tuner's compiler (:func:`autoconv.gpu.compiler.compile_source`: NVRTC, the tuner's options;
needs CuPy), in rounds that alternate the order of the pool sizes. Each process compiles one
candidate before the clock starts (NVRTC's first compilation in a process costs more).

Printed, per pool size: candidates per second, and per candidate the median wall and CPU
seconds of the compilation in its process. Where candidates per second stop growing with P
while the wall time per candidate grows and its CPU time does not, the processes wait for
cores. Also printed: ``os.cpu_count()``, the affinity mask's size and the cgroup's CPU limit
(``/sys/fs/cgroup/cpu.max``), where there is one.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from autoconv.config.load import load_config
from autoconv.search.dry_run import sample_plans


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a tune config: its problems and families give the candidates")
    parser.add_argument("--per-family", type=int, default=2, help="configurations per problem and family: "
                        "the default, then random valid ones (default: 2)")
    parser.add_argument("--processes", default="1,2,4,8,15", help="pool sizes to compare (default: 1,2,4,8,15)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the pool sizes, alternating "
                        "their order (default: 2)")
    return parser.parse_args(argv)


def cpu_limits() -> dict[str, str]:
    """What bounds this process's CPUs besides the count: affinity and the cgroup's quota."""
    limits = {"os.cpu_count()": str(os.cpu_count()), "affinity": str(len(os.sched_getaffinity(0)))}
    quota = Path("/sys/fs/cgroup/cpu.max")
    limits["cgroup cpu.max"] = quota.read_text().strip() if quota.exists() else "(none)"
    return limits


def candidates(config_path: str, per_family: int, limits) -> list[tuple[str, str]]:
    """(kernel name, source) of each distinct candidate: per problem and family, up to
    ``per_family`` valid configurations, the default first (a source that several problems
    share, as the tuner's cubin cache would, counts once)."""
    config = load_config(config_path)
    rendered: dict[str, str] = {}  # source -> kernel name
    for _, _, plan, _ in sample_plans(config.problems, config.families, per_family=per_family, seed=config.seed,
                                      device=limits):
        if plan is not None:
            rendered.setdefault(plan.source, plan.name)
    return [(name, source) for source, name in rendered.items()]


def _compile(job: tuple[str, str, str]) -> tuple[bool, float, float]:
    from autoconv.gpu.compiler import compile_source

    name, source, arch = job
    outcome = compile_source(source, arch, name)
    return outcome.ok, outcome.seconds, outcome.cpu_seconds


def _warm_up(source: str, arch: str) -> None:
    _compile(("warm_up", source, arch))


def compile_all(jobs: list[tuple[str, str, str]], processes: int) -> dict[str, float]:
    """One pool of ``processes`` compiles every job, with an empty compute cache of its own
    (``CUDA_CACHE_PATH``): NVRTC 12.9+ keeps compiled programs in the driver's compute cache,
    where a second pool would find the first pool's in ~10% of the time (the first version of
    this script measured that, not the compiler)."""
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="autoconv-compute-cache-") as compute_cache, \
            _environment(CUDA_CACHE_PATH=compute_cache), \
            concurrent.futures.ProcessPoolExecutor(max_workers=processes, mp_context=context, initializer=_warm_up,
                                                   initargs=(jobs[0][1], jobs[0][2])) as pool:
        list(pool.map(time.sleep, [0.5] * processes))  # a pause per process: all started and warmed up
        started = time.perf_counter()
        outcomes = list(pool.map(_compile, jobs))
        wall = time.perf_counter() - started
    failed = sum(not ok for ok, _, _ in outcomes)
    if failed:
        raise SystemExit(f"{failed} of {len(jobs)} candidates failed to compile")
    return {"candidates_per_s": len(jobs) / wall, "wall_s": wall,
            "median_compile_s": statistics.median(s for _, s, _ in outcomes),
            "median_compile_cpu_s": statistics.median(c for _, _, c in outcomes)}


@contextlib.contextmanager
def _environment(**values: str):
    """``os.environ`` with ``values`` set while the block runs (spawned processes inherit it)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main(argv=None) -> int:
    args = parse_args(argv)
    from autoconv.gpu.device import read_device

    limits = read_device()[0]
    jobs = [(name, source, limits.arch) for name, source in candidates(args.config, args.per_family, limits)]
    sizes = [int(text) for text in args.processes.split(",")]
    for name, value in cpu_limits().items():
        print(f"{name}: {value}")
    print(f"{len(jobs)} candidates, {limits.arch}")
    results: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    for round_number in range(args.rounds):
        for size in sizes if round_number % 2 == 0 else sizes[::-1]:
            result = compile_all(jobs, size)
            results[size].append(result)
            print(f"round {round_number + 1}, {size:3d} processes: {result['candidates_per_s']:6.2f} candidates/s "
                  f"({result['wall_s']:.1f} s); per candidate: wall {result['median_compile_s']:.3f} s, "
                  f"CPU {result['median_compile_cpu_s']:.3f} s", flush=True)
    for size in sizes:
        rates = [r["candidates_per_s"] for r in results[size]]
        print(f"{size:3d} processes: {statistics.median(rates):6.2f} candidates/s (rounds: "
              f"{', '.join(f'{rate:.2f}' for rate in rates)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
