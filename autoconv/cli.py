"""The ``autoconv`` command line. Each subcommand parses its arguments here and calls
one function of the module that does the work; errors autoconv raises on purpose are
printed without a traceback and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys

from autoconv.errors import AutoconvError


def _add_problem_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--problem", required=True, metavar="SPEC",
                        help="problem spec, e.g. N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,dilation=1")


def _parse_params(items: list[str]) -> dict[str, object]:
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


# ---- render / space / families -----------------------------------------------------------

def cmd_render(args) -> int:
    from autoconv.families import get_family
    from autoconv.problem import parse_spec

    family = get_family(args.family)
    problem = parse_spec(args.problem)
    config = None
    if args.param:
        config = dict(family.space.default_config(problem, _device_limits()))
        config.update(_parse_params(args.param))
    plan = family.plan(problem, config, _device_limits())
    print(plan.source, end="")
    return 0


def cmd_space(args) -> int:
    from autoconv.families import get_family
    from autoconv.problem import parse_spec

    family = get_family(args.family)
    problem = parse_spec(args.problem)
    points = family.space.points(problem, _device_limits())
    total = sum(1 for _ in family.space.all_configs())
    print(f"{family.name}: {len(points)} valid configurations of {total} for {problem.shape_str()}")
    if args.list:
        for config in points:
            print("  " + " ".join(f"{k}={v}" for k, v in config.items()))
    return 0


def cmd_families(args) -> int:
    from autoconv.families import all_families

    for family in all_families():
        print(f"{family.name:14s} {family.summary}")
    return 0


def _device_limits():
    """The H100's limits: rendering and enumerating spaces needs no GPU."""
    from autoconv.device import H100
    return H100


# ---- the parser --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    from autoconv import __version__

    parser = argparse.ArgumentParser(
        prog="autoconv", description="Autotuning CUDA kernel generator for 2-D convolution.")
    parser.add_argument("--version", action="version", version=f"autoconv {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    render = commands.add_parser("render", help="print the CUDA source of a family's kernel for a problem")
    render.add_argument("family")
    _add_problem_args(render)
    render.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="override a parameter of the default config (repeatable)")
    render.set_defaults(handler=cmd_render)

    space = commands.add_parser("space", help="count (and list) a family's valid configs for a problem")
    space.add_argument("family")
    _add_problem_args(space)
    space.add_argument("--list", action="store_true", help="list every valid configuration")
    space.set_defaults(handler=cmd_space)

    families = commands.add_parser("families", help="list the kernel families")
    families.set_defaults(handler=cmd_families)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except AutoconvError as err:
        print(f"autoconv {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"autoconv {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
