"""The 3xTF32 tensor-core families are as accurate as float32, and their error is not a bias.

The tensor cores add each product into the accumulator rounding toward zero, so every product
a chain adds at the result's magnitude pulls the result toward zero. Errors of that kind add up
coherently through a network's layers where round-to-nearest errors partly cancel (ResNet-50 end
to end: docs/lab-notes/2026-11-23-wgmma-accumulation-bias.md). The emulator models that truncation
(wgmma_tf32.cuh), so the order of a chain's products is checked here on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.emulator import emulate_plan
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec
from autoconv.verify.reference import conv2d_reference

#: A ResNet-like reduction (GEMM_K = 1152), small enough to emulate in a few seconds.
SPEC = "N=1,C=128,H=10,W=10,K=64,R=3,S=3,stride=1,pad=1,dilation=1"


def errors(family: str, config=None, seeds=(0, 1)) -> tuple[float, float]:
    """(relative L2 error, mean error along the sign of the exact result / its RMS), averaged
    over post-ReLU-like inputs (x >= 0) and signed weights."""
    problem = parse_spec(SPEC)
    plan = get_family(family).plan(problem, config)
    l2, bias = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        x = rng.uniform(0.0, 1.0, problem.input_shape).astype(np.float32)
        w = rng.uniform(-1.0, 1.0, problem.weight_shape).astype(np.float32)
        want = conv2d_reference(problem, x, w, None)
        got = emulate_plan(plan, x, w).astype(np.float64)
        l2.append(np.linalg.norm(got - want) / np.linalg.norm(want))
        bias.append(np.mean(np.sign(want) * (got - want)) / np.sqrt(np.mean(want ** 2)))
    return float(np.mean(l2)), float(np.mean(bias))


@pytest.mark.slow
def test_wgmma_chains_add_the_big_products_last():
    # Measured with this emulator: small and big products interleaved per k step (12 truncations
    # at the result's magnitude per K tile of 32) gave 2.9e-7 L2 and -1.7e-7 bias; small terms of
    # the whole tile first (4 truncations) give 1.7e-7 and -0.75e-7. strict float32 SIMT
    # (implicit_gemm) gives 5.7e-7, unbiased.
    l2, bias = errors("implicit_gemm_wgmma")
    assert l2 < 2.2e-7
    assert abs(bias) < 1.1e-7
