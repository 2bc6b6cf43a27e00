"""``autoconv cache clear | export FILE | import FILE``: the winners' cache as a whole."""

from __future__ import annotations

import argparse

from autoconv.cache.winners import WinnerCache, default_location, is_url
from autoconv.commands.console import shown, stdout_console
from autoconv.errors import AutoconvError

ACTIONS = (("clear", "delete the cache file (also a corrupt one), or a URL database's autoconv tables"),
           ("export", "write every cached winner to a JSON file"),
           ("import", "merge winners from an exported JSON file (the faster entry stays)"))


def add_parser(commands) -> None:
    cache = commands.add_parser("cache", help="clear, export or import the winners' cache")
    actions = cache.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, summary in ACTIONS:
        sub = actions.add_parser(action, help=summary)
        if action != "clear":
            sub.add_argument("file", metavar="FILE")
        sub.add_argument("--cache", metavar="PATH|URL", help="the cache: a file or a SQLAlchemy URL (default: "
                         "$AUTOCONV_CACHE or ~/.cache/autoconv/winners.sqlite3)")
    cache.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return cache_command(args.action, getattr(args, "file", None), cache=args.cache)


def cache_command(action: str, file: str | None = None, cache: str | None = None) -> int:
    """Clear the cache (a file is deleted, a URL database loses autoconv's tables only),
    export it to ``file`` or merge ``file`` into it."""
    console = stdout_console()
    if action == "clear":
        target = cache or default_location()
        existed = WinnerCache.clear(target)
        if is_url(target):  # only autoconv's tables go, never Optuna's
            console.print(f"{'dropped the tables autoconv_meta, autoconv_winners in' if existed else 'no cache in'} "
                          f"{shown(target)}")
        else:
            console.print(f"{'deleted' if existed else 'no cache at'} {target}")
        return 0
    if file is None:
        raise AutoconvError(f"cache {action} needs a FILE")
    with WinnerCache(cache) as winners:
        if action == "export":
            count = winners.export(file)
            console.print(f"exported {count} winner{'s' if count != 1 else ''} from {winners.location} to {file}")
        else:
            stored, kept = winners.import_file(file)
            console.print(f"imported {stored} winner{'s' if stored != 1 else ''} into {winners.location}"
                          + (f"; kept {kept} faster existing entr{'ies' if kept != 1 else 'y'}" if kept else ""))
    return 0
