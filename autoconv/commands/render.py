"""``autoconv render FAMILY --problem SPEC``: print the CUDA source of a family's kernel."""

from __future__ import annotations

import argparse

from autoconv.commands.options import RENDER_DEVICE, add_problem_arg
from autoconv.errors import AutoconvError
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec


def add_parser(commands) -> None:
    render = commands.add_parser("render", help="print the CUDA source of a family's kernel for a problem")
    render.add_argument("family")
    add_problem_arg(render)
    render.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="override a parameter of the default config (repeatable)")
    render.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    family = get_family(args.family)
    problem = parse_spec(args.problem)
    config = None
    if args.param:
        config = dict(family.space.default_config(problem, RENDER_DEVICE))
        config.update(parse_params(args.param))
    plan = family.plan(problem, config, RENDER_DEVICE)
    print(plan.source, end="")
    return 0


def parse_params(items: list[str]) -> dict[str, object]:
    """``--param NAME=VALUE`` items as a dict: each value an int, else a float, else a string."""
    params: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise AutoconvError(f"--param {item!r}: expected NAME=VALUE, e.g. BM=64")
        try:
            params[key.strip()] = int(value)
        except ValueError:
            try:
                params[key.strip()] = float(value)
            except ValueError:
                params[key.strip()] = value.strip()
    return params
