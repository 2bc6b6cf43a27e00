"""The ``autoconv`` command line: the parser built from the command modules, and the
dispatch. Each module of :mod:`autoconv.commands` adds its subcommand
(``add_parser``) and runs it (``run``); errors autoconv raises on purpose are printed
as one line on stderr, without a traceback, with exit status 2; so is an ``OSError`` no
command foresaw (the file it names and why).
"""

from __future__ import annotations

import argparse
import sys

from autoconv._version import __version__
from autoconv.commands import bench, cache, check, families, render, report, show, space, tune, verify
from autoconv.errors import AutoconvError

#: The command modules, in the order ``autoconv --help`` lists them.
COMMANDS = (render, space, families, verify, check, bench, report, tune, show, cache)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoconv", description="Autotuning CUDA kernel generator for 2-D convolution.")
    parser.add_argument("--version", action="version", version=f"autoconv {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
