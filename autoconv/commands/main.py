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
    from autoconv.kernels.families import get_family
    from autoconv.problems.problem import parse_spec

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
    from autoconv.formatting import format_params
    from autoconv.kernels.families import get_family
    from autoconv.problems.problem import parse_spec

    family = get_family(args.family)
    problem = parse_spec(args.problem)
    points = family.space.points(problem, _device_limits())
    total = sum(1 for _ in family.space.all_configs())
    print(f"{family.name}: {len(points)} valid configurations of {total} for {problem.shape_str()}")
    if args.list:
        for config in points:
            print("  " + format_params(config))
    return 0


def cmd_families(args) -> int:
    from autoconv.kernels.families import all_families

    for family in all_families():
        print(f"{family.name:14s} {family.summary}")
    return 0


def cmd_verify(args) -> int:
    if not args.emulate:
        raise AutoconvError("GPU verification: use `autoconv tune`; `--emulate` runs on the CPU")
    from autoconv.emulator.check import verify_command

    return verify_command(args.problem, args.family, args.samples, args.seed, jobs=args.jobs,
                          verbose=args.verbose)


def cmd_check(args) -> int:
    from autoconv.problems.config import format_config, load_config
    from autoconv.errors import ConfigError

    try:
        config = load_config(args.config)
    except ConfigError as err:
        for line in err.errors:
            print(line, file=sys.stderr)
        count = len(err.errors)
        print(f"autoconv check: {count} error{'s' if count != 1 else ''} in {args.config}",
              file=sys.stderr)
        return 2
    print(format_config(config))
    return 0


def cmd_bench(args) -> int:
    from autoconv.bench.benchmark import bench_command

    return bench_command(args.config, tune=not args.no_tune, out=args.out, rounds=args.rounds,
                         samples=args.samples, torch=not args.no_torch, argv=sys.argv[1:])


def cmd_report(args) -> int:
    from autoconv.bench.report import report_command

    return report_command(args.results, args.out, plots=not args.no_plots, argv=sys.argv[1:])


def cmd_tune(args) -> int:
    from autoconv.commands.console import tune_command

    families = [name.strip() for item in args.families or [] for name in item.split(",") if name.strip()]
    return tune_command(args.config, families=families or None, trials=args.trials, seconds=args.seconds,
                        patience=args.patience, dry_run=args.dry_run, storage=args.storage,
                        cache=args.cache, retune=args.retune, per_family=args.per_family, gpus=args.gpus)


def cmd_show(args) -> int:
    from autoconv.commands.console import show_command

    return show_command(cache=args.cache, config_path=args.config)


def cmd_cache(args) -> int:
    from autoconv.commands.console import cache_command

    return cache_command(args.action, getattr(args, "file", None), cache=args.cache)


def _device_limits():
    """The H100's limits: rendering and enumerating spaces needs no GPU."""
    from autoconv.kernels.limits import H100
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

    verify = commands.add_parser(
        "verify", help="check kernels against a float64 reference (--emulate: on the CPU, no GPU needed)")
    verify.add_argument("--emulate", action="store_true",
                        help="run the generated CUDA on the CPU emulator (g++ with AddressSanitizer)")
    _add_problem_args(verify)
    verify.add_argument("--family", action="append", metavar="F",
                        help="a family to check (repeatable; default: every family)")
    verify.add_argument("--samples", type=int, default=3, metavar="N",
                        help="configs per family: the default plus N-1 random valid ones (default 3)")
    verify.add_argument("--seed", type=int, metavar="S",
                        help="seed of the config sample and the inputs (default: random, printed)")
    verify.add_argument("--jobs", type=int, metavar="J",
                        help="configs compiled and run at a time (default: the CPU count)")
    verify.add_argument("--verbose", action="store_true",
                        help="print the full compiler or sanitizer report of a failure")
    verify.set_defaults(handler=cmd_verify)

    check = commands.add_parser("check", help="validate a tuning config and list the problems it expands to")
    check.add_argument("config", help="a YAML config, e.g. examples/quickstart.yaml")
    check.set_defaults(handler=cmd_check)

    bench = commands.add_parser(
        "bench", help="time each problem's cached winner against cuDNN (strict FP32 and TF32) and PyTorch")
    bench.add_argument("config", help="a YAML config, e.g. examples/resnet50.yaml")
    bench.add_argument("--no-tune", action="store_true",
                       help="refuse to tune: a problem without a cached winner is an error")
    bench.add_argument("--out", metavar="FILE",
                       help="where to write the results JSON (default: results.json in the config's "
                            "results folder)")
    bench.add_argument("--rounds", type=int, default=3, metavar="R",
                       help="alternating autoconv/cuDNN measurement rounds per problem (default 3)")
    bench.add_argument("--samples", type=int, default=7, metavar="S",
                       help="timed CUDA-graph replays per measurement (default 7)")
    bench.add_argument("--no-torch", action="store_true", help="leave out the PyTorch column")
    bench.set_defaults(handler=cmd_bench)

    report = commands.add_parser(
        "report", help="write report.md, CSV, JSON and plots from a results JSON of `autoconv bench`")
    report.add_argument("--results", default="results.json", metavar="FILE",
                        help="results JSON written by `autoconv bench` (default results.json)")
    report.add_argument("--out", metavar="DIR",
                        help="folder to write the report into (default: the results file's folder)")
    report.add_argument("--no-plots", action="store_true",
                        help="tables only (no matplotlib needed)")
    report.set_defaults(handler=cmd_report)
    tune = commands.add_parser("tune", help="search the fastest verified kernel for each problem of a config (GPU)")
    tune.add_argument("config", help="a YAML config, e.g. examples/quickstart.yaml")
    tune.add_argument("--families", action="append", metavar="F[,F...]",
                      help="kernel families to search (default: the config's, else all)")
    tune.add_argument("--trials", type=int, metavar="N", help="evaluated trials per problem (overrides the config)")
    tune.add_argument("--seconds", type=float, metavar="S", help="wall seconds per problem (overrides the config)")
    tune.add_argument("--patience", type=int, metavar="N",
                      help="stop a problem after N trials without improvement (overrides the config)")
    tune.add_argument("--dry-run", action="store_true",
                      help="no GPU: render each family's default (--per-family N: N configs) and compile with nvcc")
    tune.add_argument("--per-family", type=int, default=1, metavar="N",
                      help="with --dry-run: configs compiled per family and problem (default 1)")
    tune.add_argument("--storage", metavar="URL", help="Optuna storage: a journal file path or a SQLAlchemy "
                      "URL (default: the config's); with a URL and no cache configured, the winners go "
                      "into the same database")
    tune.add_argument("--cache", metavar="PATH|URL",
                      help="winners' cache: a file or a SQLAlchemy URL (default: the config's)")
    tune.add_argument("--retune", action="store_true", help="search even problems with a cached winner")
    tune.add_argument("--gpus", metavar="all|I[,I...]",
                      help="tune with one worker process per GPU of this host (`all`, or indices like 0,1); "
                           "they share each problem's study and budget")
    tune.set_defaults(handler=cmd_tune)

    show = commands.add_parser("show", help="list the cached winners (shape, family, params, ms, TFLOP/s)")
    show.add_argument("config", nargs="?", help="a config whose cache to list: the one `autoconv tune CONFIG` "
                      "writes (default: --cache, $AUTOCONV_CACHE or ~/.cache/autoconv/winners.sqlite3)")
    show.add_argument("--cache", metavar="PATH|URL", help="the cache: a file or a SQLAlchemy URL")
    show.set_defaults(handler=cmd_show)

    cache = commands.add_parser("cache", help="clear, export or import the winners' cache")
    cache_actions = cache.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, summary in (("clear", "delete the cache file (also a corrupt one), or a URL database's "
                                      "autoconv tables"),
                            ("export", "write every cached winner to a JSON file"),
                            ("import", "merge winners from an exported JSON file (the faster entry stays)")):
        sub = cache_actions.add_parser(action, help=summary)
        if action != "clear":
            sub.add_argument("file", metavar="FILE")
        sub.add_argument("--cache", metavar="PATH|URL", help="the cache: a file or a SQLAlchemy URL (default: "
                         "$AUTOCONV_CACHE or ~/.cache/autoconv/winners.sqlite3)")
    cache.set_defaults(handler=cmd_cache)
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
