"""``autoconv report``: a report folder (report.md, CSV, plots) from the results JSON of
``autoconv bench`` (:mod:`autoconv.bench.report` writes it); the results file itself is only
read."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from autoconv.bench.report import BASELINE_LABELS, write_report
from autoconv.bench.results import geomeans_by_precision, load_results
from autoconv.bench.suite import is_suite_folder, readme_table_span, select, write_tables
from autoconv.errors import UsageError


def add_parser(commands) -> None:
    report = commands.add_parser(
        "report", help="write report.md, CSV and plots from a results JSON of `autoconv bench` (which it only reads)")
    report.add_argument("--results", default="results.json", metavar="FILE",
                        help="results JSON written by `autoconv bench` (default results.json)")
    report.add_argument("--out", metavar="DIR",
                        help="folder to write the report into (default: the results file's folder)")
    report.add_argument("--no-plots", action="store_true",
                        help="tables only (no matplotlib needed)")
    report.add_argument("--suite", metavar="NAME",
                        help="instead of --results: write a suite's tables again from its results folder (--out, "
                             "e.g. results/h200), into its README.md and between the headline-table markers of "
                             "--readme (what `autoconv bench --suite` writes at its end; no GPU needed)")
    report.add_argument("--readme", metavar="FILE", help="with --suite: the README whose headline table is rewritten")
    report.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.suite is not None:
        if args.out is None:
            raise UsageError("--out", None, "with --suite, name the suite's results folder, e.g. results/h200")
        if not Path(args.out).is_dir():
            raise UsageError("--out", args.out, "not a folder; name the suite's results folder, e.g. results/h200")
        if not any(is_suite_folder(Path(args.out) / b.name) for b in select(args.suite)):
            raise UsageError("--out", args.out, f"holds no benchmark of the {args.suite} suite; name the GPU's "
                             "folder the suite wrote, e.g. results/h200")
        if args.readme is not None:
            readme_table_span(Path(args.readme))
        write_tables(Path(args.out), readme=Path(args.readme) if args.readme else None, suite=args.suite)
        print(f"wrote {Path(args.out) / 'README.md'}" + (f" and the table in {args.readme}" if args.readme else ""))
        return 0
    return report_command(args.results, args.out, plots=not args.no_plots, argv=sys.argv[1:])


def report_command(results_path: str, out_dir: str | None = None, *, plots: bool = True,
                   argv: Sequence[str] | None = None) -> int:
    """Read and check ``results_path`` (left as it was), write the report into ``out_dir``
    (by default the results file's folder), list what was written."""
    results = load_results(results_path)
    out_dir = out_dir or str(Path(results_path).parent)
    command = "autoconv " + shlex.join(argv) if argv else None
    written = write_report(results, out_dir, plots=plots, results_path=results_path, command=command)
    print(f"wrote {len(written)} files to {out_dir}/: " + ", ".join(p.name for p in written))
    for precision, means in geomeans_by_precision(results["problems"]).items():
        if means["speedup_vs_cudnn"] is not None:
            print(f"{precision}: geometric-mean speedup over cuDNN {BASELINE_LABELS[precision]}: "
                  f"{means['speedup_vs_cudnn']:.3f}x over {means['layers']} layers")
    return 0
