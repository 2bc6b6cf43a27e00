"""Every kernel family, once, in the inner loop (``-m "not gpu and not slow"``): its default
configuration for one small awkward problem, run in the CPU emulator against the float64
reference. The thorough checks (every shape, every code-path switch) of the tensor-core families
are slow; this one is not (a few seconds a family to compile, well under one to run once the
program is cached), so a bug in any family's main path fails the inner loop.

The problem has a batch of 2, bias, different strides, dilations and paddings on each axis and
side, an odd channel count and sizes that no tile divides: GEMM_M = 90 (two tiles of 64 pixels,
the second partial), GEMM_N = 37, GEMM_K = 78 (at least two K tiles, the last partial, for every
BK up to 64).
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.emulator.check import verify_emulated
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.problems.problem import ConvProblem, parse_spec

SMOKE_SPEC = "N=2,C=13,H=11,W=8,K=37,R=3,S=2,stride=2x1,dilation=1x2,pad=1:0:2:1,bias=1"
#: The problem in each form a family may need, tried in order: float32 NCHW, then bfloat16 NHWC
#: (the 16-bit families').
SMOKE_FORMS = ("", ",layout=NHWC,precision=bf16")


def smoke_problem(family_name: str) -> ConvProblem:
    """The first form of the smoke problem that ``family_name`` supports."""
    family = get_family(family_name)
    reasons = []
    for form in SMOKE_FORMS:
        problem = parse_spec(SMOKE_SPEC + form)
        reason = family.unsupported_reason(problem)
        if reason is None:
            return problem
        reasons.append(f"{problem.spec()}: {reason}")
    raise AssertionError(f"{family_name} supports no form of the smoke problem; add one to SMOKE_FORMS "
                         "(" + "; ".join(reasons) + ")")


def test_the_smoke_problem_is_awkward():
    problem = parse_spec(SMOKE_SPEC)
    assert (problem.gemm_m, problem.gemm_n, problem.gemm_k) == (90, 37, 78)
    assert problem.stride[0] != problem.stride[1] and problem.dilation[0] != problem.dilation[1]
    top, bottom, left, right = problem.padding
    assert top != bottom and left != right and top != left and problem.bias and problem.N > 1


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_family_default_config_matches_reference(family_name, seed):
    problem = smoke_problem(family_name)
    check = verify_emulated(problem, family_name, None, np.random.default_rng(seed))
    assert check.ok, (f"{family_name} failed on --problem {problem.spec()}\n  config {dict(check.config)}\n"
                      f"  kernel {check.kernel}: {check.label}\n  {check.message}\n{check.details}")
