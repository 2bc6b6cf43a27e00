"""``autoconv families``: the kernel families, one line each."""

from __future__ import annotations

import argparse

from autoconv.kernels.families import all_families


def add_parser(commands) -> None:
    families = commands.add_parser("families", help="list the kernel families")
    families.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for family in all_families():
        print(f"{family.name:14s} {family.summary}")
    return 0
