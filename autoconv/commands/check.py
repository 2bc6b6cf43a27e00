"""``autoconv check CONFIG``: validate a tuning config and list the problems it expands to
and the settings ``autoconv tune CONFIG`` would use, and check that tune could write its
outputs (no GPU, nothing written)."""

from __future__ import annotations

import argparse
import sys

from autoconv.commands.console import shown
from autoconv.config.load import load_config
from autoconv.config.outputs import output_problems
from autoconv.errors import ConfigError
from autoconv.search.session import TuneSession


def add_parser(commands) -> None:
    check = commands.add_parser("check", help="validate a tuning config and list the problems it expands to")
    check.add_argument("config", help="a YAML config, e.g. examples/quickstart.yaml")
    check.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the config's summary (0), or every error in it on stderr (2); an output that
    ``autoconv tune`` could not write (results folder, storage, cache) is an error too."""
    try:
        config = load_config(args.config)
    except ConfigError as err:
        for line in err.errors:
            print(line, file=sys.stderr)
        count = len(err.errors)
        print(f"autoconv check: {count} error{'s' if count != 1 else ''} in {args.config}",
              file=sys.stderr)
        return 2
    session = TuneSession.from_config(config)
    print(format_config(session))
    problems = output_problems(config.results, session.storage, session.cache)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        count = len(problems)
        print(f"autoconv check: {count} output{'s' if count != 1 else ''} of {args.config} cannot be written; "
              "`autoconv tune` would refuse to start", file=sys.stderr)
        return 2
    return 0


def format_config(session: TuneSession) -> str:
    """The summary ``autoconv check`` prints: one row per problem, then the settings as
    ``autoconv tune CONFIG`` would use them (the cache is where its winners go; a URL's
    password is masked)."""
    config = session.config
    header = ("name", "count", "shape", "output", "GFLOP")
    rows = [(item.name, str(item.count), item.problem.shape_str(),
             f"{item.problem.P}x{item.problem.Q}", f"{item.problem.gflop:.4g}")
            for item in config.problems]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    right = {1, 4}  # numbers align right

    def line(row):
        return "  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                         for i, (cell, w) in enumerate(zip(row, widths))).rstrip()

    instances = sum(item.count for item in config.problems)
    lines = [f"{config.origin}: {len(config.problems)} problem{'s' if len(config.problems) != 1 else ''}"
             f" ({instances} layer instance{'s' if instances != 1 else ''},"
             f" {config.total_flops / 1e9:.3f} GFLOP in all)", "",
             line(header), line(tuple("-" * w for w in widths)), *map(line, rows), ""]
    lines += [f"families: {', '.join(session.families)}",
              f"budget per problem: {session.budget.describe()}",
              f"seed: {config.seed}   device: {config.device}   "
              f"workspace limit: {config.workspace_limit_mb} MiB",
              f"cache: {shown(session.cache)}",
              f"storage: {shown(session.storage)}",
              f"results: {config.results}"]
    lines += [f"note: {note}" for note in config.notes]
    return "\n".join(lines)
