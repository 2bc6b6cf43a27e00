"""The ``autoconv`` command line: the parser built from the command modules, and the
dispatch. Each module of :mod:`autoconv.commands` adds its subcommand
(``add_parser``) and runs it (``run``); errors autoconv raises on purpose are printed
as one line on stderr, without a traceback, with exit status 2; so is an ``OSError`` no
command foresaw (the file it names and why).

The command modules are imported when the parser is built, not when this module is: the
``autoconv`` console script imports this module, and every process multiprocessing spawns from it
(a tuning run's compilers, tuning workers and GPU workers) imports the script again before it
starts. Imported here, the commands brought the tuner, Optuna and numpy into each of them, and
the GPU workers started about a second later (docs/lab-notes/2026-11-28-tune-start-up.md), where
``python -m autoconv`` brings nothing (multiprocessing does not import a ``__main__`` module
again).
"""

from __future__ import annotations

import argparse
import logging
import sys

from autoconv._version import __version__
from autoconv.errors import AutoconvError

#: ``--log-level``'s choices.
LOG_LEVELS = {"warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}


def build_parser() -> argparse.ArgumentParser:
    # (here, not at the top: see the module's docstring)
    from autoconv.commands import bench, cache, check, families, render, report, show, space, tune, verify

    parser = argparse.ArgumentParser(
        prog="autoconv", description="Autotuning CUDA kernel generator for 2-D convolution.")
    parser.add_argument("--version", action="version", version=f"autoconv {__version__}")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="autoconv's diagnostics shown on stderr: warnings (the default), also what it "
                             "decides (info), or more (debug)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (render, space, families, verify, check, bench, report, tune, show, cache):  # as --help lists them
        command.add_parser(commands)
    return parser


def configure_logging(level: str) -> None:
    """Show the ``autoconv`` loggers' records of ``level`` (a :data:`LOG_LEVELS` name) and above
    on stderr, one line each (this process's records; tuning workers keep theirs)."""
    logger = logging.getLogger("autoconv")
    for old in [handler for handler in logger.handlers if getattr(handler, "autoconv_console", False)]:
        logger.removeHandler(old)  # (main may run again in one process, with another stderr)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("autoconv: %(levelname)s: %(name)s: %(message)s"))
    handler.setLevel(LOG_LEVELS[level])
    handler.autoconv_console = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    # (at the default, the logger keeps the level the application's logging gives it)
    logger.setLevel(logging.NOTSET if level == "warning" else LOG_LEVELS[level])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    try:
        return args.handler(args)
    except AutoconvError as err:
        print(f"autoconv {args.command}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a path the checks did not foresee: still one line naming it
        where = f"{err.filename}: " if err.filename else ""
        print(f"autoconv {args.command}: error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"autoconv {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
