"""The checked tuning config (:class:`TuneConfig`) and the command line's overrides of it
(``--precision``, ``--layout``). It is what the config reader
(:mod:`autoconv.config.schema`) makes of a file, and what a tuning run works from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autoconv.cache.location import default_location as default_cache_location
from autoconv.config.budget import Budget
from autoconv.errors import UsageError
from autoconv.kernels.families import FAMILY_NAMES
from autoconv.problems.models import NamedProblem, merge_identical
from autoconv.problems.problem import LAYOUTS, PRECISIONS, did_you_mean

DEFAULT_STORAGE = ".autoconv/studies.journal"
DEFAULT_RESULTS = "results"
DEFAULT_WORKSPACE_LIMIT_MB = 1024
#: Largest ``workspace_limit_mb``: 1 TiB, more memory than any GPU has (an H200 has 141 GB).
MAX_WORKSPACE_LIMIT_MB = 1024 * 1024
#: Largest ``device``: a CUDA device index counts the host's GPUs from 0, and no host has this many.
MAX_DEVICE = 255


@dataclass(frozen=True)
class TuneConfig:
    """A checked tuning config. Paths are absolute (resolved against the config's folder)."""

    origin: str  # the file it came from, as given
    problems: tuple[NamedProblem, ...]
    families: tuple[str, ...]
    budget: Budget = Budget()
    seed: int = 0
    cache: Path | str = field(default_factory=default_cache_location)  # a file, or a SQLAlchemy URL
    storage: str = DEFAULT_STORAGE  # absolute journal-file path, or a SQLAlchemy URL
    results: Path = Path(DEFAULT_RESULTS)
    device: int = 0
    workspace_limit_mb: int = DEFAULT_WORKSPACE_LIMIT_MB
    notes: tuple[str, ...] = field(default=(), compare=False)  # e.g. merged duplicates
    cache_given: bool = False  # the config has a `cache:` key (else `cache` is the default)

    @property
    def workspace_limit_bytes(self) -> int:
        return self.workspace_limit_mb * 1024 * 1024

    @property
    def storage_is_url(self) -> bool:
        return "://" in self.storage

    @property
    def total_flops(self) -> int:
        """FLOPs of one pass over every layer instance (problems weighted by count)."""
        return sum(item.problem.flops * item.count for item in self.problems)


def with_precision(config: TuneConfig, precision: str) -> TuneConfig:
    """``config`` with every problem in ``precision`` (the command line's ``--precision``);
    problems that become identical are tuned once, their counts added (as in a config).

    Raises:
        UsageError: ``precision`` is not one of :data:`~autoconv.problems.problem.PRECISIONS`.
    """
    if precision not in PRECISIONS:
        raise UsageError("--precision", precision, f"use one of {', '.join(PRECISIONS)}")
    return dataclasses.replace(config, problems=merge_identical(
        NamedProblem(item.name, item.problem.in_precision(precision), item.count) for item in config.problems))


def with_layout(config: TuneConfig, layout: str) -> TuneConfig:
    """``config`` with every problem in ``layout`` (the command line's ``--layout``).

    Raises:
        UsageError: ``layout`` is not one of :data:`~autoconv.problems.problem.LAYOUTS`.
    """
    if layout.upper() not in LAYOUTS:
        raise UsageError("--layout", layout, f"use one of {', '.join(LAYOUTS)}")
    return dataclasses.replace(config, problems=merge_identical(
        NamedProblem(item.name, item.problem.with_(layout=layout.upper()), item.count) for item in config.problems))


def parse_families(values: Sequence[str] | None, flag: str = "--families") -> tuple[str, ...] | None:
    """The kernel families the command line names: ``values`` are the texts of each
    ``--families F[,F...]`` given (None or no texts: the option was not given, the config's
    families apply).

    Raises:
        UsageError: a text names no family (``--families ,,,`` would otherwise mean every
            family), a name is empty, unknown or given twice.
    """
    if not values:
        return None
    names: list[str] = []
    for text in values:
        parts = [part.strip() for part in text.split(",")]
        if not any(parts):
            raise UsageError(flag, text, f"names no family; give one or more of {', '.join(FAMILY_NAMES)} "
                             f"separated by commas, or leave {flag} out for the config's families")
        for name in parts:
            if not name:
                raise UsageError(flag, text, "an empty family name (two commas in a row, or one at an end); "
                                 f"separate the names by single commas, e.g. {','.join(FAMILY_NAMES[:2])}")
            if name not in FAMILY_NAMES:
                raise UsageError(flag, name, f"unknown kernel family{did_you_mean(name, FAMILY_NAMES)}; "
                                 f"families: {', '.join(FAMILY_NAMES)}")
            if name in names:
                raise UsageError(flag, name, "named twice; name each family once")
            names.append(name)
    return tuple(names)
