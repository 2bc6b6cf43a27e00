"""How long to tune each problem (:class:`Budget`), and the rules numeric settings follow.

The rules are shared: the config file's ``budget:`` section, :class:`Budget` itself and the
command line's ``--trials``, ``--seconds``, ``--patience`` (and other counts) all check with
the same functions, so a value refused in one place is refused in all, with the same words.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

from autoconv.errors import UsageError, quoted

DEFAULT_TRIALS = 50


def count_problem(value) -> str | None:
    """Why ``value`` is not a count >= 1 (trials, patience, --per-family, --jobs), or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "expected an integer"
    return "must be >= 1" if value < 1 else None


def seconds_problem(value) -> str | None:
    """Why ``value`` is not a finite number of seconds > 0, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "expected a number of seconds"
    return "must be > 0" if value <= 0 else None


#: The shortest time budget per problem: one candidate needs about this long to compile (0.1-0.6 s of
#: CPU, docs/lab-notes/2026-11-27-nvrtc-compile-cost.md), be verified and be timed; a shorter budget
#: would end before any candidate ran.
MIN_BUDGET_SECONDS = 0.5


def budget_seconds_problem(value) -> str | None:
    """Why ``value`` is not a time budget per problem, a number of seconds >=
    :data:`MIN_BUDGET_SECONDS`, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "expected a number of seconds"
    if value < MIN_BUDGET_SECONDS:
        return (f"must be >= {MIN_BUDGET_SECONDS:g} (one candidate takes about that long to compile, verify "
                "and time: a shorter budget ends before any candidate runs)")
    return None


#: The rule of each budget field; :class:`Budget`, the config reader and the command line's
#: ``--trials``, ``--seconds`` and ``--patience`` all check with these.
BUDGET_RULES: dict[str, Callable[[object], str | None]] = {
    "trials": count_problem, "seconds": budget_seconds_problem, "patience": count_problem}


def argument_type(rule: Callable[[object], str | None], parse: Callable[[str], object] = int):
    """An argparse ``type=`` that parses the text and checks it with ``rule``: a bad value
    exits with status 2 and ``argument --flag: <why>, got '<text>'``."""
    def convert(text: str):
        try:
            value = parse(text)
        except ValueError:
            value = text
        reason = rule(value)
        if reason:
            raise argparse.ArgumentTypeError(f"{reason}, got {quoted(text)}")
        return value
    convert.__name__ = "number"  # (argparse names the type in some messages)
    return convert


@dataclass(frozen=True)
class Budget:
    """How long to tune each problem: stop at whichever limit comes first.

    Raises:
        UsageError: a field breaks its rule (:data:`BUDGET_RULES`), e.g. ``trials=0``.
    """

    trials: int | None = DEFAULT_TRIALS  # valid trials that ran
    seconds: float | None = None  # wall time
    patience: int | None = None  # trials without a significant improvement before giving up

    def __post_init__(self) -> None:
        for name, rule in BUDGET_RULES.items():
            value = getattr(self, name)
            reason = None if value is None else rule(value)
            if reason:
                raise UsageError(name, value, reason)

    def describe(self) -> str:
        parts = []
        if self.trials is not None:
            parts.append(f"{self.trials} trials")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s")
        if self.patience is not None:
            parts.append(f"patience {self.patience}")
        return ", ".join(parts)
