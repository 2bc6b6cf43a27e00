"""``autoconv space FAMILY --problem SPEC [--list]``: count (and list) a family's valid
configurations for a problem."""

from __future__ import annotations

import argparse

from autoconv.commands.options import RENDER_DEVICE, add_problem_arg
from autoconv.errors import SearchSpaceError
from autoconv.formatting import format_params
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec


def add_parser(commands) -> None:
    space = commands.add_parser("space", help="count (and list) a family's valid configs for a problem")
    space.add_argument("family")
    add_problem_arg(space)
    space.add_argument("--list", action="store_true", help="list every valid configuration")
    space.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    family = get_family(args.family)
    problem = parse_spec(args.problem)
    reason = family.unsupported_reason(problem)
    if reason:  # as render refuses it: no config of the family computes this problem
        raise SearchSpaceError(reason)
    points = family.space.points(problem, RENDER_DEVICE)
    total = sum(1 for _ in family.space.all_configs())
    print(f"{family.name}: {len(points)} valid configurations of {total} for {problem.shape_str()}")
    if args.list:
        for config in points:
            print("  " + format_params(config))
    return 0
