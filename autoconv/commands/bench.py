"""``autoconv bench CONFIG``: each problem's cached winner against cuDNN and PyTorch
(:mod:`autoconv.bench.benchmark` measures), the results JSON written
(:func:`autoconv.bench.results.write_results`) and the table printed.

``autoconv bench --suite headline``: every headline benchmark tuned from an empty cache and
measured, written as ``results/<gpu>/<benchmark>/`` with the README's table
(:mod:`autoconv.bench.suite`).

``autoconv bench --end-to-end MODULE:FACTORY --input NxCxHxW[,...]``: a PyTorch model's forward
against its conversion, in each mode and runner (:mod:`autoconv.bench.end_to_end`)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autoconv.bench.benchmark import run_bench
from autoconv.bench.end_to_end import (
    FILES,
    MODES,
    RUNNERS,
    Request,
    parse_names,
    parse_shapes,
    records_table,
    report_markdown,
    target_problem,
)
from autoconv.bench.results import (
    OTHER_CUDNN_MODES,
    ReportError,
    baseline_ms,
    geomeans_by_precision,
    is_positive,
    precision_of,
    results_target_problem,
    speedup,
    without_trials,
    write_results,
)
from autoconv.bench.suite import CHECKOUT_ROOT, TABLE_BEGIN, gpu_folder_name, run_suite, select
from autoconv.errors import AutoconvError, UsageError
from autoconv.files import write_atomically
from autoconv.problems.problem import LAYOUTS, PRECISIONS
from autoconv.search.session import TuneSession


def add_parser(commands) -> None:
    bench = commands.add_parser(
        "bench", help="time each problem's cached winner against cuDNN in the same precision (and the other "
                      "mode) and PyTorch")
    bench.add_argument("config", nargs="?", help="a YAML config, e.g. examples/resnet50.yaml (or --suite)")
    bench.add_argument("--suite", metavar="NAME",
                       help="instead of a config: run a benchmark suite (`headline`) from empty caches, each "
                            "benchmark tuned, measured and reported into OUT/<gpu>/<benchmark>/ (OUT: --out, "
                            "default results), and the table written to OUT/<gpu>/README.md and between the "
                            "headline-table markers of --readme")
    bench.add_argument("--only", metavar="NAME[,NAME...]",
                       help="with --suite: run only these benchmarks (the table still lists every one)")
    bench.add_argument("--resume", action="store_true",
                       help="with --suite: keep the benchmarks an earlier suite run completed in OUT")
    bench.add_argument("--readme", metavar="FILE",
                       help="with --suite: the README whose headline table is rewritten (default: README.md "
                            "of the checkout, if it has the markers)")
    bench.add_argument("--end-to-end", metavar="MODULE:FACTORY",
                       help="instead of a config: time a PyTorch model's whole forward (e.g. "
                            "torchvision.models:resnet50, built with random weights) against "
                            "autoconv.torch.convert(model), alternating, in each --modes and --runners, and write "
                            "results.json, env.json and report.md into --out (default e2e_FACTORY); tune the "
                            "model's problems first (autoconv tune --model)")
    bench.add_argument("--input", metavar="NxCxHxW[,...]",
                       help="with --end-to-end: the input shapes, one per batch, e.g. 32x3x224x224,1x3x224x224")
    bench.add_argument("--modes", metavar="M[,M...]",
                       help=f"with --end-to-end: the modes ({', '.join(MODES)}; default all)")
    bench.add_argument("--runners", metavar="R[,R...]",
                       help=f"with --end-to-end: the runners ({', '.join(RUNNERS)}; default all)")
    bench.add_argument("--iterations", type=int, metavar="N",
                       help=f"with --end-to-end: forwards per side per round (default {Request.iterations})")
    bench.add_argument("--no-tune", action="store_true",
                       help="refuse to tune: a problem without a cached winner is an error")
    bench.add_argument("--out", metavar="FILE|DIR",
                       help="where to write the results JSON (default: results.json in the config's "
                            "results folder); with --suite, the results folder (default: results)")
    bench.add_argument("--rounds", type=int, metavar="R",
                       help="alternating autoconv/cuDNN measurement rounds per problem (default 3)")
    bench.add_argument("--samples", type=int, metavar="S",
                       help="timed CUDA-graph replays per measurement (default 7)")
    bench.add_argument("--no-torch", action="store_true", help="leave out the PyTorch column")
    bench.add_argument("--no-trials", action="store_true",
                       help="leave each problem's tuning history (its trials) out of the results JSON: a smaller "
                            "file, and no convergence plot in the report (what the suite records)")
    bench.add_argument("--precision", choices=PRECISIONS,
                       help="measure every problem in this precision (fp32, tf32, bf16 or fp16; default: the "
                            "config's)")
    bench.add_argument("--layout", type=str.upper, choices=LAYOUTS,
                       help="every problem's memory layout, NCHW or NHWC (default: the config's)")
    bench.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.end_to_end is not None:
        return end_to_end_command(args)
    for flag in ("input", "modes", "runners", "iterations"):
        if getattr(args, flag) is not None:
            raise UsageError(f"--{flag}", getattr(args, flag), "goes with --end-to-end only")
    if args.suite is not None:
        if args.config is not None:
            raise UsageError("config", args.config, "give either a config or --suite, not both")
        given = [flag for flag, value in (("--no-tune", args.no_tune), ("--no-torch", args.no_torch),
                                          ("--no-trials", args.no_trials), ("--precision", args.precision),
                                          ("--layout", args.layout), ("--rounds", args.rounds),
                                          ("--samples", args.samples)) if value not in (None, False)]
        if given:
            raise UsageError(given[0], True, "does not go with --suite: each benchmark of a suite says how it "
                             "is tuned and measured")
        return suite_command(args.suite, only=args.only, out=args.out, resume=args.resume, readme=args.readme,
                             device=0, argv=sys.argv[1:])
    if args.config is None:
        raise UsageError("config", None, "give a config file (e.g. examples/resnet50.yaml), or --suite headline")
    for flag in ("only", "resume", "readme"):
        if getattr(args, flag):
            raise UsageError(f"--{flag}", getattr(args, flag), "goes with --suite only")
    return bench_command(args.config, tune=not args.no_tune, out=args.out,
                         rounds=3 if args.rounds is None else args.rounds,
                         samples=7 if args.samples is None else args.samples, torch=not args.no_torch,
                         argv=sys.argv[1:], precision=args.precision, layout=args.layout, trials=not args.no_trials)


def bench_command(config_path: str, *, tune: bool = True, out: str | None = None, rounds: int = 3,
                  samples: int = 7, torch: bool = True, argv: Sequence[str] | None = None,
                  precision: str | None = None, layout: str | None = None, trials: bool = True) -> int:
    """Measure (tuning what the session's cache lacks unless ``tune`` is False), write the
    results JSON (without the tuning history unless ``trials``), print the table."""
    if rounds < 1 or samples < 1:
        raise AutoconvError(f"--rounds and --samples must be >= 1 (got {rounds} and {samples})")
    session = TuneSession.load(config_path, precision=precision, layout=layout)
    path = Path(out) if out else Path(session.config.results) / "results.json"
    problem = results_target_problem(path)  # before the measuring, not after it
    if problem:
        raise ReportError(f"cannot write the results to {path}: {problem}")
    command = "autoconv " + shlex.join(argv if argv is not None else ["bench", config_path])
    results = run_bench(session, tune=tune, rounds=rounds, samples=samples, torch=torch,
                        command=command, log=print)
    write_results(results if trials else without_trials(results), path)
    print()
    print(format_table(results))
    print(f"\nwrote {path}; the report: autoconv report --results {path}")
    return 0


def end_to_end_command(args: argparse.Namespace) -> int:
    """``autoconv bench --end-to-end``: the request and the output folder checked before any
    work, the measurement, the files written and the table printed."""
    if args.config is not None or args.suite is not None:
        raise UsageError("--end-to-end", args.end_to_end, "give one of a config, --suite or --end-to-end")
    given = [flag for flag, value in (("--no-tune", args.no_tune), ("--no-torch", args.no_torch),
                                      ("--no-trials", args.no_trials), ("--precision", args.precision),
                                      ("--layout", args.layout), ("--samples", args.samples), ("--only", args.only),
                                      ("--resume", args.resume), ("--readme", args.readme))
             if value not in (None, False)]
    if given:
        raise UsageError(given[0], True, "does not go with --end-to-end: its modes (--modes) say the precision "
                         "and layout, and it tunes nothing")
    if args.input is None:
        raise UsageError("--input", None, "--end-to-end needs the input shapes, e.g. --input 32x3x224x224,1x3x224x224")
    settings = {name: value for name, value in (("rounds", args.rounds), ("iterations", args.iterations))
                if value is not None}
    request = Request(args.end_to_end, parse_shapes(args.input), modes=parse_names(args.modes, tuple(MODES)),
                      runners=parse_names(args.runners, RUNNERS), **settings)
    out = Path(args.out or f"e2e_{request.name}")
    problem = target_problem(out)
    if problem:
        raise UsageError("--out", str(out), f"cannot write there: {problem}; pass another --out")
    try:
        from autoconv.bench.end_to_end_measure import measure
        from autoconv.torch import convert
    except ImportError as err:
        raise UsageError("--end-to-end", args.end_to_end, f"needs PyTorch ({err}); pip install 'autoconv[torch]'") \
            from None
    command = "autoconv " + shlex.join(sys.argv[1:])
    records, env = measure(request, convert=convert, command=command, log=print)
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "results.json", json.dumps(records, indent=1) + "\n")
    write_atomically(out / "env.json", json.dumps(env, indent=1) + "\n")
    write_atomically(out / "report.md", report_markdown(records, env))
    print()
    print(records_table(records))
    print(f"\nwrote {', '.join(str(out / name) for name in FILES)}")
    return 0


def suite_command(suite: str, *, only: str | None = None, out: str | None = None, resume: bool = False,
                  readme: str | None = None, device: int = 0, argv: Sequence[str] | None = None) -> int:
    """Run a suite (:mod:`autoconv.bench.suite`) on CUDA device ``device``; 0 when every
    benchmark completed, 1 otherwise."""
    from autoconv.gpu.device import read_device  # (a GPU machine's command: CuPy only here)

    names = [name.strip() for name in (only or "").split(",") if name.strip()]
    benchmarks = select(suite, names or None)
    readme_path = Path(readme) if readme else _default_readme()
    _, identity = read_device(device)
    gpu_root = Path(out or "results") / gpu_folder_name(identity.gpu_name)
    command = "autoconv " + shlex.join(argv if argv is not None else ["bench", "--suite", suite])
    outcomes = run_suite(benchmarks, gpu_root, command=command, resume=resume, readme=readme_path)
    for outcome in outcomes:
        print(f"{outcome.benchmark.name}: {outcome.status}")
    print(f"wrote {gpu_root}/README.md" + (f" and the table in {readme_path}" if readme_path else ""))
    return 0 if all(o.status in ("ok", "kept") for o in outcomes) else 1


def _default_readme() -> Path | None:
    """The checkout's README.md when it has the table's markers, else None."""
    path = CHECKOUT_ROOT / "README.md"
    try:
        return path if TABLE_BEGIN in path.read_text(encoding="utf-8") else None
    except OSError:
        return None


# ---- the table ---------------------------------------------------------------------------------

_COLUMNS = (
    # (header, width, align)
    ("layer", None, "<"), ("precision", 9, "<"), ("family", 14, "<"), ("autoconv ms", 11, ">"),
    ("TFLOP/s", 8, ">"), ("% peak", 6, ">"), ("cuDNN ms", 9, ">"), ("speedup", 7, ">"),
    ("other cuDNN ms", 14, ">"), ("torch ms", 9, ">"),
)


def format_table(results: Mapping[str, Any]) -> str:
    """The bench table: one row per problem, a geometric-mean row per precision; fixed-width columns.

    Speedup is cuDNN ms / autoconv ms, cuDNN in the layer's precision (strict FP32 for fp32,
    TF32 for tf32; above 1: autoconv is faster); "other cuDNN" is the other mode. "% peak" is
    autoconv's share of the measured FP32 FMA peak for fp32, of the GPU's dense tensor peak in the
    layer's precision for the tensor-core precisions. A geometric-mean row per precision.
    """
    problems = results["problems"]
    peak = results.get("peak_tflops")

    def ms(value):
        return f"{value:.4f}" if is_positive(value) else "-"

    rows = []
    for p in problems:
        precision = precision_of(p)
        rows.append([p["name"], precision, p.get("family") or "-", ms(p.get("autoconv_ms")),
                     _number(p.get("autoconv_tflops"), ".2f"),
                     _number(p.get("pct_of_peak") if precision == "fp32"
                             else (p.get("pct_of_tensor_peak") or {}).get("autoconv"), ".1f"),
                     ms(baseline_ms(p)), _number(speedup(p), ".2f", "x"),
                     ms(p.get(f"cudnn_{OTHER_CUDNN_MODES[precision]}_ms") if OTHER_CUDNN_MODES[precision] else None),
                     ms(p.get("torch_ms"))])
    means_rows = []
    for precision, means in geomeans_by_precision(problems).items():
        mean_tflops = means.get("autoconv_tflops")
        of = peak if precision == "fp32" else next(
            (p.get("tensor_peak_tflops") for p in problems if precision_of(p) == precision), None)
        percent = 100 * mean_tflops / of if is_positive(mean_tflops) and is_positive(of) else None
        means_rows.append(["geomean", precision, "", "", _number(mean_tflops, ".2f"), _number(percent, ".1f"),
                           "", _number(means.get("speedup_vs_cudnn"), ".2f", "x"), "", ""])
    widths = [max(len(c[0]), *(len(r[0]) for r in rows + means_rows)) if c[1] is None else max(c[1], len(c[0]))
              for c in _COLUMNS]
    widths = [max(w, *(len(r[i]) for r in rows + means_rows)) for i, w in enumerate(widths)]

    def line(cells):
        return "  ".join(f"{cell:{align}{width}}" for cell, width, (_, _, align) in zip(cells, widths, _COLUMNS))

    header = line([c[0] for c in _COLUMNS])
    rule = line(["-" * w for w in widths])
    return "\n".join([header, rule] + [line(r) for r in rows] + [rule] + [line(r) for r in means_rows])


def _number(value, spec: str, suffix: str = "") -> str:
    return format(value, spec) + suffix if is_positive(value) else "-"
