"""Compare ways of tuning one config, each from an empty storage, in alternating order.

    python examples/tuning_cost.py examples/resnet50.yaml --rounds 2 --out cost/ \\
        --variant "depth 8=" --variant "depth 24=--pipeline-depth 24"
    python examples/tuning_cost.py examples/vgg16.yaml --history history.sqlite3 --out cost/ \\
        --variant "plain=" --variant "ranked=--rank 16"

Each variant is ``NAME=EXTRA ARGUMENTS`` for ``autoconv tune``. Every run starts from a fresh
Optuna storage and a fresh winners' cache (empty, or a copy of ``--history``: the winners a
study transfers from; the history's model of ``--rank`` reads the storage, so give it
``--history-storage`` too), so that no run profits from another. Rounds alternate the order
of the variants (the first round in the order given, the next reversed, ...), because what
runs first pays for cold disks and caches. Each run also gets an empty compute cache of its own
(``CUDA_CACHE_PATH``): NVRTC 12.9 and later keep compiled programs in the driver's compute cache
(~/.nv/ComputeCache), so a run that compiles the candidates another run compiled before finds
them there in ~10% of the time, which made whichever run came second look faster; and an empty
CuPy kernel cache (``CUPY_CACHE_DIR``), where the GPU workers' warm-up compiles CuPy's own kernels
(a fresh machine's first run paid ~20 s there; docs/lab-notes/2026-11-29-measurement-noise.md
says which comparisons these caches confounded). Each run's
``tune.json`` is kept in ``--out``;
printed and written (``--out``/cost.json): per run, its wall seconds and the compilers' wall
and CPU seconds and the GPU's (summed over the candidates); per variant, each run's wall seconds
and the median, and the geometric mean over the problems of the variant's best time over the first
variant's (and the worst problem), from the same round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from autoconv.config.load import load_config
from autoconv.gpu.timing import geometric_mean


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("--variant", action="append", required=True, metavar="NAME=ARGS",
                        help="a way of tuning: a name and the extra arguments of `autoconv tune`")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--history", help="a winners' cache each run starts from a copy of")
    parser.add_argument("--history-storage", help="an Optuna journal each run starts from a copy of")
    parser.add_argument("--out", required=True, help="a folder for the runs' tune.json and cost.json")
    return parser.parse_args(argv)


def run_once(config: str, extra: list[str], history: str | None, history_storage: str | None,
             summary: Path, keep: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="autoconv-cost-") as scratch:
        cache, storage = Path(scratch) / "cache.sqlite3", Path(scratch) / "studies.journal"
        if history:
            shutil.copy(history, cache)
        if history_storage:
            shutil.copy(history_storage, storage)
        command = [sys.executable, "-m", "autoconv", "tune", config, "--cache", str(cache),
                   "--storage", str(storage), *extra]
        # no run finds another's compiled programs, its own or CuPy's
        fresh_caches = {"CUDA_CACHE_PATH": str(Path(scratch) / "compute-cache"),
                        "CUPY_CACHE_DIR": str(Path(scratch) / "cupy-kernel-cache")}
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ | fresh_caches)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    shutil.copy(summary, keep)
    return json.loads(summary.read_text())


#: Work summed over a run's problems (tune.json): the compilers' wall and CPU seconds, the GPU's.
WORK = ("compile_s", "compile_cpu_s", "gpu_s")


def summed_work(summary: dict) -> dict[str, float]:
    return {key: sum(problem.get(key) or 0.0 for problem in summary["problems"]) for key in WORK}


def main(argv=None) -> int:
    args = parse_args(argv)
    variants = [(name, extra.split()) for name, _, extra in (v.partition("=") for v in args.variant)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = load_config(args.config).results / "tune.json"
    runs: dict[str, list[dict]] = {name: [] for name, _ in variants}
    for round_number in range(args.rounds):
        order = variants if round_number % 2 == 0 else variants[::-1]
        for name, extra in order:
            keep = out / f"tune_{name.replace(' ', '_')}_round{round_number + 1}.json"
            result = run_once(args.config, extra, args.history, args.history_storage, summary, keep)
            runs[name].append(result)
            work = summed_work(result)
            print(f"round {round_number + 1} {name}: {result['wall_s']:.1f} s (compile {work['compile_s']:.1f} s, "
                  f"{work['compile_cpu_s']:.1f} CPU-s; GPU {work['gpu_s']:.1f} s)", flush=True)
    first = variants[0][0]
    report = {}
    for name, _ in variants:
        ratios = []
        for mine, theirs in zip(runs[name], runs[first]):
            best = {p["name"]: p["time_ms"] for p in theirs["problems"] if p.get("time_ms")}
            ratios += [p["time_ms"] / best[p["name"]] for p in mine["problems"]
                       if p.get("time_ms") and p["name"] in best]
        work = [summed_work(r) for r in runs[name]]
        report[name] = {"wall_s": [r["wall_s"] for r in runs[name]],
                        **{key: [w[key] for w in work] for key in WORK},
                        "median_wall_s": statistics.median(r["wall_s"] for r in runs[name]),
                        "best_time_vs_first_geomean": geometric_mean(ratios) if ratios else None,
                        "worst_problem_vs_first": max(ratios, default=None)}
        print(f"{name}: wall {report[name]['median_wall_s']:.1f} s (runs {report[name]['wall_s']}), best times "
              f"{report[name]['best_time_vs_first_geomean']:.3f}x {first}'s, worst problem "
              f"{report[name]['worst_problem_vs_first']:.3f}x")
    (out / "cost.json").write_text(json.dumps({"config": args.config, "variants": dict(variants),
                                               "rounds": args.rounds, "report": report}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
