"""``autoconv verify --emulate --problem SPEC``: check sampled configurations of each
kernel family on the CPU emulator against the float64 reference, then the same on problems
like SPEC that take the code paths it does not (its dilation, bias, precision and output type
decide some), and list what neither reached (:mod:`autoconv.emulator.check` does the work)."""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterable
from typing import TextIO

from autoconv.backends.base import Status
from autoconv.commands.options import add_problem_arg
from autoconv.config.budget import argument_type, count_problem, seconds_problem
from autoconv.emulator.check import (
    DEFAULT_MAX_SECONDS,
    LABELS,
    STATUSES,
    EmulatedCheck,
    Variant,
    check_emulation_size,
    family_seed,
    problem_variants,
    sample_families,
    switch_pairs,
    uncovered_switches,
    untaken_paths,
    verify_configs,
)
from autoconv.errors import AutoconvError
from autoconv.kernels.families import Family, all_families, get_family
from autoconv.problems.problem import ConvProblem, parse_spec


def add_parser(commands) -> None:
    verify = commands.add_parser(
        "verify", help="check kernels against a float64 reference (--emulate: on the CPU, no GPU needed)")
    verify.add_argument("--emulate", action="store_true",
                        help="run the generated CUDA on the CPU emulator (g++ with AddressSanitizer)")
    add_problem_arg(verify)
    verify.add_argument("--family", action="append", metavar="F",
                        help="a family to check (repeatable; default: every family)")
    verify.add_argument("--samples", type=int, default=3, metavar="N",
                        help="configs per family: the default, one per valid value of each code-path "
                             "switch, then random valid ones up to N (default 3; the switches may need more)")
    verify.add_argument("--seed", type=int, metavar="S",
                        help="seed of the config sample and the inputs (default: random, printed)")
    verify.add_argument("--jobs", type=argument_type(count_problem), metavar="J",
                        help="configs compiled and run at a time (default: the CPU count)")
    verify.add_argument("--max-seconds", type=argument_type(seconds_problem, float), default=DEFAULT_MAX_SECONDS,
                        metavar="S", help="refuse a problem whose emulation is estimated to take longer than S "
                        f"seconds per configuration (default {DEFAULT_MAX_SECONDS:.0f})")
    verify.add_argument("--problem-only", action="store_true",
                        help="check the problem alone, not also problems like it that take the code paths it "
                             "does not (dilation per axis, bias, the other output type or precision); those "
                             "are listed instead")
    verify.add_argument("--verbose", action="store_true",
                        help="print the full compiler or sanitizer report of a failure")
    verify.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not args.emulate:
        raise AutoconvError("GPU verification: use `autoconv tune`; `--emulate` runs on the CPU")
    return verify_command(args.problem, args.family, args.samples, args.seed, jobs=args.jobs,
                          verbose=args.verbose, max_seconds=args.max_seconds, variants=not args.problem_only)


def verify_command(spec: str, family_names: Iterable[str] | None, samples: int, seed: int | None, *,
                   jobs: int | None = None, verbose: bool = False, out: TextIO | None = None,
                   max_seconds: float = DEFAULT_MAX_SECONDS, variants: bool = True) -> int:
    """Check ``samples`` configurations of each family on the emulator, then (with ``variants``)
    the code paths the problem does not take on problems like it
    (:func:`~autoconv.emulator.check.problem_variants`).

    Prints one line per configuration (family, kernel, error, status) with the reason
    under a failure (the full report with ``verbose``), what no check reached (code paths of the
    problem, switch values of the configurations), then a summary.

    Returns:
        0 when every configuration verified passed; 1 on any mismatch, fault, timeout or
        compile error, or when nothing could be verified.
    """
    out = out or sys.stdout
    problem = parse_spec(spec)
    if samples < 1:
        raise AutoconvError(f"--samples {samples}: must be at least 1")
    families = [get_family(name) for name in family_names] if family_names else all_families()
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    print(f"verifying {problem.shape_str()} ({problem.spec()}) on the CPU emulator: the default, "
          f"every code-path switch value and random configs up to {samples} per family"
          + (", then the code paths the problem does not take on problems like it" if variants else "")
          + f", seed {seed} (reproduce with --seed {seed})", file=out)

    started = time.perf_counter()
    plans, skipped = sample_families(problem, families, samples, seed)
    check_emulation_size([family.plan(problem, config) for family, configs in plans for config in configs],
                         max_seconds)
    extra: list[Variant] = []
    unreached: dict[str, list[str]] = {}  # family -> code paths of the problem no check takes, why
    for family, configs in plans:
        if variants:
            covered = frozenset().union(*(switch_pairs(family, config, problem) for config in configs))
            found, missed = problem_variants(family, problem, covered, family_seed(seed, family), max_seconds)
            extra += found
            unreached[family.name] = [f"{name}: {reason}" for name, reason in missed]
        else:
            names = [path.name for path in untaken_paths(family, problem)]
            unreached[family.name] = [f"{', '.join(names)}: not run (--problem-only)"] if names else []
    for family, reason in skipped:
        print(f"  {family.name:<14s} skipped: {reason}", file=out)
    runs: list[tuple[Family, ConvProblem, list[dict[str, object]]]] = [
        (family, problem, configs) for family, configs in plans]
    runs += [(variant.family, variant.problem, variant.configs) for variant in extra]
    width = max((len(family.kernel_name(case, config)) for family, case, configs in runs for config in configs),
                default=0)

    def report(check: EmulatedCheck) -> None:
        error = "-" if check.error is None else f"{check.error:.2e}"
        status = check.label if check.ok else check.label.upper()
        print(f"  {check.family:<14s} {check.kernel:<{width}s}  error {error:>8s}  {status}", file=out, flush=True)
        if not check.ok:
            for line in (check.details if verbose and check.details else check.message).splitlines():
                print(f"      {line}", file=out)

    checks: list[EmulatedCheck] = []
    for family, configs in plans:
        checks += verify_configs(problem, family, configs, family_seed(seed, family), jobs=jobs, on_check=report)
    if extra:
        print("code paths the problem does not take, on problems like it:", file=out)
    for variant in extra:
        print(f"  {variant.family.name:<14s} {', '.join(variant.paths)}: {variant.problem.spec()}", file=out)
        checks += verify_configs(variant.problem, variant.family, variant.configs,
                                 (family_seed(seed, variant.family) + 1) % 2**32, jobs=jobs, on_check=report)

    _list_unreached(runs, unreached, out)
    counts = {status: sum(check.status == status for check in checks) for status in STATUSES}
    elapsed = time.perf_counter() - started
    verified_families = len({check.family for check in checks})
    print(f"summary: {len(checks)} config{'' if len(checks) == 1 else 's'} of {verified_families} "
          f"famil{'y' if verified_families == 1 else 'ies'}: "
          + ", ".join(f"{counts[status]} {LABELS[status]}" for status in STATUSES) + f" ({elapsed:.1f} s)", file=out)
    if not checks:
        print("nothing was verified", file=out)
        return 1
    return 0 if counts[Status.OK] == len(checks) else 1


def _list_unreached(runs: list[tuple[Family, ConvProblem, list[dict[str, object]]]], unreached: dict[str, list[str]],
                    out: TextIO) -> None:
    """Print, per family, the code paths (``unreached``) and the switch values that no check of
    ``runs`` (family, problem, configs) took; nothing when every one was."""
    lines = []
    for name, paths in unreached.items():
        family = get_family(name)
        checked = [(case, config) for owner, case, configs in runs if owner is family for config in configs]
        missing = paths + [f"{switch} {', '.join(str(value) for value in values)}: no valid configuration"
                           for switch, values in uncovered_switches(family, checked).items()]
        if missing:
            lines.append(f"  {name:<14s} " + "; ".join(missing))
    if lines:
        print("not checked:", file=out)
        for line in lines:
            print(line, file=out)
