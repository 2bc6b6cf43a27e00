"""Cache entries that pass ``cache import``'s checks: the plan autoconv renders for the
problem (its default config), as if tuned here."""

from __future__ import annotations

from autoconv.cache.entries import CacheEntry, CacheKey
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec
from tests.helpers import cache_entry


def tuned_entry(key: CacheKey, time_ms: float = 1.0, family: str = "implicit_gemm", **changes) -> CacheEntry:
    """A winner for ``key`` that autoconv could have tuned: ``family``'s default config for
    the key's problem, its kernel name, source hash and workspace (``changes`` replace
    fields)."""
    plan = get_family(family).plan(parse_spec(key.problem_key))
    values = dict(family=plan.family, config=plan.config, kernel_name=plan.name, source_hash=plan.source_hash,
                  workspace_bytes=plan.workspace_bytes, tflops=plan.problem.flops / (time_ms * 1e-3) / 1e12)
    values.update(changes)
    return cache_entry(key, time_ms, **values)
