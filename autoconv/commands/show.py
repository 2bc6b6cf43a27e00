"""``autoconv show [CONFIG]``: the cached winners of every GPU, current or stale;
``autoconv show --predict SPEC``: what the cache says about a problem, tuned or not."""

from __future__ import annotations

import argparse

from autoconv.cache.neighbours import nearest_winners
from autoconv.cache.sql import NoCache
from autoconv.cache.winners import WinnerCache
from autoconv.commands.console import cache_table, stdout_console
from autoconv.formatting import format_params
from autoconv.problems.problem import parse_spec
from autoconv.search.session import TuneSession
from autoconv.search.warm_start import TRANSFERRED_WINNERS


def add_parser(commands) -> None:
    show = commands.add_parser("show", help="list the cached winners (shape, family, params, ms, TFLOP/s)")
    show.add_argument("config", nargs="?", help="a config whose cache to list: the one `autoconv tune CONFIG` "
                      "writes (default: --cache, $AUTOCONV_CACHE or ~/.cache/autoconv/winners.sqlite3)")
    show.add_argument("--cache", metavar="PATH|URL", help="the cache: a file or a SQLAlchemy URL")
    show.add_argument("--predict", metavar="SPEC",
                      help="instead of the list: for this problem (a spec, e.g. N=8,C=64,H=56,W=56,K=64,R=3,S=3,"
                           "pad=1), its winner per GPU if tuned, else the nearest tuned problems' winners, which "
                           "a tuning study tries first")
    show.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.predict is not None:
        return predict_command(args.predict, cache=args.cache, config_path=args.config)
    return show_command(cache=args.cache, config_path=args.config)


def show_command(cache: str | None = None, config_path: str | None = None) -> int:
    """List ``cache``; else the cache ``autoconv tune`` uses for the config at
    ``config_path`` (:class:`~autoconv.search.session.TuneSession`); else the default one."""
    try:
        winners = WinnerCache(_location(cache, config_path), create=False)  # a reader: creates nothing
    except NoCache as err:
        stdout_console().print(cache_table([], f"{err}: 0 cached winners"))
        return 0
    with winners:
        entries = winners.entries()
        title = f"{winners.location}: {len(entries)} cached winner{'s' if len(entries) != 1 else ''}"
    stdout_console().print(cache_table(entries, title))
    return 0


def _location(cache: str | None, config_path: str | None):
    """``cache``; else the cache ``autoconv tune`` uses for the config at ``config_path``
    (:class:`~autoconv.search.session.TuneSession`); else None, the default one."""
    return cache or (TuneSession.load(config_path).cache if config_path else None)


def predict_command(spec: str, cache: str | None = None, config_path: str | None = None) -> int:
    """Print, for the problem ``spec`` and each GPU with current entries in the cache, its
    cached winner, or else the nearest tuned problems (:mod:`autoconv.cache.neighbours`) with
    their winners and distances. Exit status 0."""
    problem = parse_spec(spec)
    console = stdout_console()
    try:
        winners = WinnerCache(_location(cache, config_path), create=False)
    except NoCache as err:
        console.print(f"{err}: nothing tuned yet; `autoconv tune` would start {problem.shape_str()} from "
                      "each family's default", markup=False, highlight=False)
        return 0
    with winners:
        entries = [e for e in winners.entries() if e.key.is_current]
    gpus = sorted({e.key.gpu_name for e in entries})
    if not gpus:
        console.print(f"{winners.location}: no current entries (none for this autoconv and templates); "
                      f"{problem.shape_str()} would start from each family's default", markup=False, highlight=False)
        return 0
    for gpu in gpus:
        own = [e for e in entries if e.key.gpu_name == gpu and e.key.problem_key == problem.key()]
        if own:
            entry = own[0]
            console.print(f"{gpu}: {problem.shape_str()} is tuned: {entry.family} {format_params(entry.config)}, "
                          f"{entry.time_ms:.4f} ms", markup=False, highlight=False)
            continue
        neighbours = nearest_winners(problem, entries, gpu_name=gpu, limit=TRANSFERRED_WINNERS)
        if not neighbours:
            console.print(f"{gpu}: no tuned problem of precision {problem.precision}; {problem.shape_str()} would "
                          "start from each family's default", markup=False, highlight=False)
            continue
        console.print(f"{gpu}: {problem.shape_str()} is not tuned; a study would try first the winners of the "
                      "problems below, and autoconv.conv2d runs the first one's configuration (where it does not "
                      "fit this shape, the nearest one that does), checked once against a reference:",
                      markup=False, highlight=False)
        for n in neighbours:
            console.print(f"  {n.problem.shape_str()} (distance {n.distance:.2f}, {n.entry.tflops:.1f} TFLOP/s): "
                          f"{n.entry.family} {format_params(n.entry.config)}", markup=False, highlight=False)
    return 0
