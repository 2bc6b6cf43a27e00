"""``autoconv show [CONFIG]``: the cached winners of every GPU, current or stale."""

from __future__ import annotations

import argparse

from autoconv.cache.sql import NoCache
from autoconv.cache.winners import WinnerCache
from autoconv.commands.console import cache_table, stdout_console
from autoconv.search.session import TuneSession


def add_parser(commands) -> None:
    show = commands.add_parser("show", help="list the cached winners (shape, family, params, ms, TFLOP/s)")
    show.add_argument("config", nargs="?", help="a config whose cache to list: the one `autoconv tune CONFIG` "
                      "writes (default: --cache, $AUTOCONV_CACHE or ~/.cache/autoconv/winners.sqlite3)")
    show.add_argument("--cache", metavar="PATH|URL", help="the cache: a file or a SQLAlchemy URL")
    show.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return show_command(cache=args.cache, config_path=args.config)


def show_command(cache: str | None = None, config_path: str | None = None) -> int:
    """List ``cache``; else the cache ``autoconv tune`` uses for the config at
    ``config_path`` (:class:`~autoconv.search.session.TuneSession`); else the default one."""
    location = cache or (TuneSession.load(config_path).cache if config_path else None)
    try:
        winners = WinnerCache(location, create=False)  # a reader: creates no file, folder or table
    except NoCache as err:
        stdout_console().print(cache_table([], f"{err}: 0 cached winners"))
        return 0
    with winners:
        entries = winners.entries()
        title = f"{winners.location}: {len(entries)} cached winner{'s' if len(entries) != 1 else ''}"
    stdout_console().print(cache_table(entries, title))
    return 0
