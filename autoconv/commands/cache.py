"""``autoconv cache clear | export FILE | import FILE``: the winners' cache as a whole."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from autoconv.cache.location import default_location
from autoconv.cache.sql import NoCache
from autoconv.cache.winners import WinnerCache
from autoconv.commands.console import shown, stdout_console
from autoconv.errors import AutoconvError, CacheError
from autoconv.urls import is_url

#: How many rejected entries ``cache import`` lists (with the reason) before "... and N more".
SHOWN_REJECTIONS = 5

ACTIONS = (("clear", "delete the cache file (also a corrupt one), or a URL database's autoconv tables; "
                     "never a file or table autoconv did not create"),
           ("export", "write every cached winner to a JSON file"),
           ("import", "merge winners from an exported JSON file (the faster entry stays; entries "
                      "autoconv could not have tuned are rejected, exit status 1)"))


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
    """Clear the cache (a file is deleted, a URL database loses autoconv's tables only;
    anything autoconv did not create is refused), export it to ``file`` or merge ``file``
    into it. Exit status 1 when ``import`` rejected entries."""
    console = stdout_console()
    if action == "clear":
        target = cache or default_location()
        with _naming(target):
            existed = WinnerCache.clear(target)
        if is_url(target):  # only autoconv's tables go, never Optuna's
            console.print(f"{'dropped the tables autoconv_meta, autoconv_winners in' if existed else 'no cache in'} "
                          f"{shown(target)}")
        else:
            console.print(f"{'deleted' if existed else 'no cache at'} {target}")
        return 0
    if file is None:
        raise AutoconvError(f"cache {action} needs a FILE")
    if action == "export":
        try:
            with _naming(cache or default_location()):
                winners = WinnerCache(cache, create=False)  # a reader: creates no cache
        except NoCache as err:
            raise CacheError(f"{err}: nothing to export") from None
        with winners:
            count = winners.export(file)
        console.print(f"exported {count} winner{'s' if count != 1 else ''} from {winners.location} to {file}")
        return 0
    with _naming(cache or default_location()):
        winners = WinnerCache(cache)
    with winners:
        result = winners.import_file(file)
    parts = [f"imported {result.stored} winner{'s' if result.stored != 1 else ''} into {winners.location}"]
    if result.identical:
        parts.append(f"{result.identical} already there (identical)")
    if result.kept:
        parts.append(f"kept {result.kept} faster existing entr{'ies' if result.kept != 1 else 'y'}")
    if result.rejected:
        parts.append(f"rejected {len(result.rejected)} entr{'ies' if len(result.rejected) != 1 else 'y'}")
    console.print("; ".join(parts), highlight=False, markup=False)
    if result.rejected:
        for reason in result.rejected[:SHOWN_REJECTIONS]:
            console.print(f"  rejected {reason}", highlight=False, markup=False)
        if len(result.rejected) > SHOWN_REJECTIONS:
            console.print(f"  ... and {len(result.rejected) - SHOWN_REJECTIONS} more", highlight=False, markup=False)
        return 1
    return 0


@contextlib.contextmanager
def _naming(location) -> Iterator[None]:
    """Turn an OSError from opening the cache at ``location`` (a "regular" file whose reads fail,
    such as /proc/self/mem) into a CacheError that names it."""
    try:
        yield
    except OSError as err:
        raise CacheError(f"cache {shown(location)}: cannot be read ({err.strerror or err}); pass the path of an "
                         "autoconv cache file, or a database URL, with --cache") from None
