"""How much error a kernel's output may have: the tolerance of each precision.

Outputs are compared with the float64 reference by relative L2 error
(:mod:`autoconv.verify.compare`).

- ``fp32``: :data:`~autoconv.verify.compare.FLOAT32_TOLERANCE` (1e-5), a constant: float32
  rounding over a reduction of thousands of terms stays near 1e-7 to 1e-6.
- ``tf32``: derived from the format and the data. Rounding an operand to TF32 (10 mantissa
  bits, to nearest) changes it by a relative ``delta`` with ``|delta| <= u = 2^-11`` and, for
  independent roundings, ``E[delta^2] <= u^2 / 3``. A product ``a*b`` then errs by
  ``a*b*(delta_a + delta_b)``, so output ``y[i] = sum_k a_k b_k`` errs with an expected square of
  at most ``(2/3) u^2 sum_k (a_k b_k)^2`` over its reduction, and the whole output by
  ``sqrt((2/3) u^2 sum_i sum_k (a_k b_k)^2)`` in L2: a second reference convolution, of the
  squares (``x^2`` with ``w^2``), gives that sum exactly. The tolerance is
  :data:`TF32_MARGIN` times that expected error, relative to ``||y||``, plus the float32 one
  for the sums. A result that drops to a coarser format (bf16's 7 bits: 8x the error) or
  loses terms fails; that it is not *more* accurate than TF32 is checked by the tests
  (a tf32 kernel must match the TF32 model itself, tests/verify/test_tolerance.py).
- ``bf16``, ``fp16``: derived from the formats and the reduction length. The inputs are the
  16-bit values the reference reads too, and their products are exact, so the error comes from
  two places. (1) The float32 sums: the tensor cores add each k step of 16 products into the
  accumulator and truncate, an error below 2^-23 of the running sum per step, of one sign (a
  bias, growing with the chain: ``ceil(GEMM_K / 16)`` steps); with a margin of
  :data:`ACCUMULATION_MARGIN` over half an ulp per step, ``4 * steps * 2^-24`` relative (2.9e-5
  for a 3x3 layer with C = 256, GEMM_K = 2304). (2) The output's one rounding to nearest in its
  type: every element within ``u`` of its value (``u`` = 2^-8 for bfloat16, 2^-11 for float16,
  nothing beyond float32's own for a float32 output), so within ``u`` in relative L2 too, a
  bound, not an estimate. The tolerance is (1) + (2) (+ float32's constant): a kernel that sums
  in 16 bits (error ~ ``u * sqrt(steps)``), reads fp16 data as bf16 or rounds an fp16 output
  to bf16 (8x fp16's ``u``) fails.
"""

from __future__ import annotations

import math
from typing import Any

import numpy

from autoconv.problems.problem import ConvProblem
from autoconv.verify.compare import FLOAT32_TOLERANCE
from autoconv.verify.reference import conv2d_reference

#: Unit roundoff of TF32 rounding to nearest: half an ulp of a 10-bit mantissa.
TF32_UNIT_ROUNDOFF = 2.0**-11
#: How far above the expected TF32 error a tf32 result may land (the expectation is already an
#: upper bound: it takes every operand's rounding error at its largest mean square).
TF32_MARGIN = 2.0
#: Unit roundoff of rounding to nearest into each 16-bit output type.
OUTPUT_UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 0.0}
#: Products the tensor cores add into the accumulator per rounding (wgmma m64nNk16: one k step).
PRODUCTS_PER_ACCUMULATION = 16
#: Bound of the float32 accumulation's bias, in half-ulps per k step.
ACCUMULATION_MARGIN = 4.0


def accumulation_error(problem: ConvProblem) -> float:
    """The relative error a 16-bit problem's float32 sums may carry (see the module docstring)."""
    steps = math.ceil(problem.gemm_k / PRODUCTS_PER_ACCUMULATION)
    return ACCUMULATION_MARGIN * steps * 2.0**-24


def expected_tf32_error(problem: ConvProblem, x, w, reference, xp: Any = numpy) -> float:
    """The expected relative L2 error of ``reference``'s convolution computed from operands
    rounded to TF32 with exact products (an upper estimate; see the module docstring)."""
    x = xp.asarray(x, dtype=xp.float64)
    w = xp.asarray(w, dtype=xp.float64)
    squares = conv2d_reference(problem.with_(bias=False), x * x, w * w, None, xp=xp)
    reference_norm = float(xp.linalg.norm(reference.ravel()))
    expected = math.sqrt(2.0 / 3.0) * TF32_UNIT_ROUNDOFF * math.sqrt(float(squares.sum()))
    return expected / reference_norm if reference_norm > 0 else expected


def tolerance(problem: ConvProblem, x, w, reference, xp: Any = numpy) -> float:
    """The relative L2 error a kernel's output for ``problem`` on inputs ``x``, ``w`` may have
    against the float64 ``reference`` (see the module docstring)."""
    if problem.precision == "tf32":
        return FLOAT32_TOLERANCE + TF32_MARGIN * expected_tf32_error(problem, x, w, reference, xp)
    if problem.precision in ("bf16", "fp16"):
        return FLOAT32_TOLERANCE + accumulation_error(problem) + OUTPUT_UNIT_ROUNDOFF[problem.output_dtype]
    return FLOAT32_TOLERANCE
