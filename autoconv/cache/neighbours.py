"""What the winners' cache knows about a problem it has no winner for: the winners of the
nearest tuned problems.

A tuned problem's winner is a good first guess for a similar problem: the same tile shapes,
pipeline depth and split-K suit similar GEMM sizes and filters. Problems are compared by
:func:`features` (the implicit GEMM's sizes and the output image on a log2 scale, the filter,
stride and dilation as they are), and :func:`nearest_winners` lists the current cache entries
of the same GPU and precision, nearest first. The tuner tries their configurations first
(:meth:`autoconv.search.tuner.Tuner`), each as the nearest valid point of its family for the
new problem; ``autoconv.conv2d`` runs the nearest one's configuration, verified on first use,
for a problem never tuned (:mod:`autoconv.runtime.selection`); ``autoconv show --predict``
says what they are and how far.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from autoconv.cache.entries import CacheEntry
from autoconv.errors import ProblemError
from autoconv.problems.problem import ConvProblem, parse_spec

#: How much each feature counts (a difference of 1 in a log2 size is one doubling): the GEMM's
#: sizes decide tiles and split-K; the filter and stride change the gather (a 1x1 stride-1
#: problem and a 3x3 one want different kernels even at equal GEMM sizes).
FEATURE_WEIGHTS = {"log2_gemm_m": 1.0, "log2_gemm_n": 1.0, "log2_gemm_k": 1.0, "log2_pq": 0.5,
                   "filter": 4.0, "stride": 2.0, "dilation": 1.0}


def features(problem: ConvProblem) -> dict[str, float]:
    """The numbers problems are compared by (see :data:`FEATURE_WEIGHTS`)."""
    return {
        "log2_gemm_m": math.log2(problem.gemm_m), "log2_gemm_n": math.log2(problem.gemm_n),
        "log2_gemm_k": math.log2(problem.gemm_k), "log2_pq": math.log2(problem.P * problem.Q),
        "filter": float(problem.R * problem.S > 1) + math.log2(problem.R * problem.S) / 4,
        "stride": math.log2(problem.stride[0] * problem.stride[1]),
        "dilation": math.log2(problem.dilation[0] * problem.dilation[1]),
    }


def distance(a: ConvProblem, b: ConvProblem) -> float:
    """Weighted Euclidean distance between the :func:`features` of two problems (0: equal sizes)."""
    fa, fb = features(a), features(b)
    return math.sqrt(sum(weight * (fa[name] - fb[name]) ** 2 for name, weight in FEATURE_WEIGHTS.items()))


@dataclass(frozen=True)
class Neighbour:
    """A tuned problem near the one asked about, its winner and how far it is."""

    problem: ConvProblem
    entry: CacheEntry
    distance: float


@lru_cache(maxsize=4096)
def _tuned_problem(problem_key: str) -> ConvProblem:
    """A cache entry's problem (parsed once: a tuning study asks for its neighbours at each step)."""
    return parse_spec(problem_key)


def nearest_winners(problem: ConvProblem, entries: Iterable[CacheEntry], *, gpu_name: str,
                    limit: int = 3) -> list[Neighbour]:
    """The ``limit`` nearest tuned problems to ``problem`` among ``entries``: current entries
    (this autoconv and templates) of GPU ``gpu_name``, same precision, dtype and layout,
    not ``problem`` itself; nearest first (ties: the faster winner per FLOP first)."""
    found = []
    for entry in entries:
        if not entry.key.is_current or entry.key.gpu_name != gpu_name:
            continue
        try:
            tuned = _tuned_problem(entry.key.problem_key)
        except ProblemError:  # (an entry of another autoconv's spec syntax)
            continue
        if tuned == problem or (tuned.precision, tuned.dtype, tuned.layout) != (
                problem.precision, problem.dtype, problem.layout):
            continue
        found.append(Neighbour(tuned, entry, distance(problem, tuned)))
    found.sort(key=lambda n: (n.distance, -n.entry.tflops))
    return found[:limit]
