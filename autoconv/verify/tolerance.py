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
    return FLOAT32_TOLERANCE
