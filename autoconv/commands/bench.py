"""``autoconv bench CONFIG``: each problem's cached winner against cuDNN and PyTorch
(:mod:`autoconv.bench.benchmark` measures), the results JSON written
(:func:`autoconv.bench.results.write_results`) and the table printed."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autoconv.bench.benchmark import run_bench
from autoconv.bench.results import ReportError, geomeans, is_positive, results_target_problem, write_results
from autoconv.errors import AutoconvError
from autoconv.search.session import TuneSession


def add_parser(commands) -> None:
    bench = commands.add_parser(
        "bench", help="time each problem's cached winner against cuDNN (strict FP32 and TF32) and PyTorch")
    bench.add_argument("config", help="a YAML config, e.g. examples/resnet50.yaml")
    bench.add_argument("--no-tune", action="store_true",
                       help="refuse to tune: a problem without a cached winner is an error")
    bench.add_argument("--out", metavar="FILE",
                       help="where to write the results JSON (default: results.json in the config's "
                            "results folder)")
    bench.add_argument("--rounds", type=int, default=3, metavar="R",
                       help="alternating autoconv/cuDNN measurement rounds per problem (default 3)")
    bench.add_argument("--samples", type=int, default=7, metavar="S",
                       help="timed CUDA-graph replays per measurement (default 7)")
    bench.add_argument("--no-torch", action="store_true", help="leave out the PyTorch column")
    bench.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return bench_command(args.config, tune=not args.no_tune, out=args.out, rounds=args.rounds,
                         samples=args.samples, torch=not args.no_torch, argv=sys.argv[1:])


def bench_command(config_path: str, *, tune: bool = True, out: str | None = None, rounds: int = 3,
                  samples: int = 7, torch: bool = True, argv: Sequence[str] | None = None) -> int:
    """Measure (tuning what the session's cache lacks unless ``tune`` is False), write the
    results JSON, print the table."""
    if rounds < 1 or samples < 1:
        raise AutoconvError(f"--rounds and --samples must be >= 1 (got {rounds} and {samples})")
    session = TuneSession.load(config_path)
    path = Path(out) if out else Path(session.config.results) / "results.json"
    problem = results_target_problem(path)  # before the measuring, not after it
    if problem:
        raise ReportError(f"cannot write the results to {path}: {problem}")
    command = "autoconv " + shlex.join(argv if argv is not None else ["bench", config_path])
    results = run_bench(session, tune=tune, rounds=rounds, samples=samples, torch=torch,
                        command=command, log=print)
    write_results(results, path)
    print()
    print(format_table(results))
    print(f"\nwrote {path}; the report: autoconv report --results {path}")
    return 0


# ---- the table ---------------------------------------------------------------------------------

_COLUMNS = (
    # (header, width, align)
    ("layer", None, "<"), ("family", 14, "<"), ("autoconv ms", 11, ">"), ("TFLOP/s", 8, ">"),
    ("% peak", 6, ">"), ("cuDNN ms", 9, ">"), ("speedup", 7, ">"), ("TF32 ms", 9, ">"),
    ("torch ms", 9, ">"),
)


def format_table(results: Mapping[str, Any]) -> str:
    """The bench table: one row per problem and a geometric-mean row; fixed-width columns.

    Speedup is cuDNN strict-FP32 ms / autoconv ms (above 1: autoconv is faster).
    """
    problems = results["problems"]
    means = results.get("geomean") or geomeans(problems)
    peak = results.get("peak_tflops")

    def ms(value):
        return f"{value:.4f}" if is_positive(value) else "-"

    rows = []
    for p in problems:
        rows.append([p["name"], p.get("family") or "-", ms(p.get("autoconv_ms")),
                     _number(p.get("autoconv_tflops"), ".2f"), _number(p.get("pct_of_peak"), ".1f"),
                     ms(p.get("cudnn_strict_ms")), _number(p.get("speedup_vs_cudnn_strict"), ".2f", "x"),
                     ms(p.get("cudnn_tf32_ms")), ms(p.get("torch_ms"))])
    mean_tflops = means.get("autoconv_tflops")
    rows.append(["geomean", "", "", _number(mean_tflops, ".2f"),
                 _number(100 * mean_tflops / peak if is_positive(mean_tflops) and is_positive(peak) else None, ".1f"),
                 "", _number(means.get("speedup_vs_cudnn_strict"), ".2f", "x"), "", ""])
    widths = [max(len(c[0]), *(len(r[0]) for r in rows)) if c[1] is None else max(c[1], len(c[0]))
              for c in _COLUMNS]
    widths = [max(w, *(len(r[i]) for r in rows)) for i, w in enumerate(widths)]

    def line(cells):
        return "  ".join(f"{cell:{align}{width}}" for cell, width, (_, _, align) in zip(cells, widths, _COLUMNS))

    header = line([c[0] for c in _COLUMNS])
    rule = line(["-" * w for w in widths])
    return "\n".join([header, rule] + [line(r) for r in rows[:-1]] + [rule, line(rows[-1])])


def _number(value, spec: str, suffix: str = "") -> str:
    return format(value, spec) + suffix if is_positive(value) else "-"
