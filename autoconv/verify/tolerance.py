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
- ``bf16``, ``fp16``: derived from the formats, the reduction length and the data. The inputs
  are the 16-bit values the reference reads too, and their products are exact in float32, so a
  right kernel errs in two places only:

  (1) Its float32 sums. The tensor cores add each k step's products into the accumulator and
  truncate (templates/wgmma_f16.cuh): each truncation loses less than one float32 ulp, at most
  ``2^-23`` of the running sum, always toward zero, so the losses add up (a bias: one truncating
  chain over GEMM_K = 4608 cost the 3xTF32 kernels 4.2e-5 relative in the emulator and 6.4e-5 on
  the GPU with three products per k step). Over an output's reduction,
  with a truncation every :data:`PRODUCTS_PER_TRUNCATION` products (``steps = ceil(GEMM_K /
  8)``) and the running sum after ``j`` of them of rms
  ``sqrt(j / steps * Q)`` (terms of random sign, as the verification data's; ``Q = sum_k (x_k
  w_k)^2``, the convolution of the squares, as for tf32), the losses total at most
  ``2^-23 * (2/3 * steps + 1) * sqrt(Q)``; plus :data:`EPILOGUE_ROUNDINGS` roundings to nearest
  after the chain (split-K slices added, the bias), each ``2^-24`` of the output. The kernel's sum
  ``s`` lies within ``D =`` :data:`ACCUMULATION_MARGIN` times that of the exact value ``v``
  (6.2e-6 relative for GEMM_K = 576, 4.7e-5 for 4608 on random data, before the margin; the
  model of the tensor cores' sums errs 4e-7 to 8e-7 and 5e-6 to 6e-6 there).

  (2) The output's one rounding to nearest (even) in its type (``u = 2^-8`` bfloat16, ``2^-11``
  float16, ``2^-24`` float32). Rounding is monotonic, so ``round(s)`` lies between
  ``round(v - D)`` and ``round(v + D)``: the error of each output is at most the larger of those
  two's errors. That is the error of ``round(v)`` itself unless the sums' error could carry ``s``
  across a rounding boundary, and half an ulp plus ``D`` at worst. The tolerance is the relative
  L2 norm of those per-output bounds: for a 16-bit output, little above the error of the
  reference rounded once (which is about ``u / sqrt(3)`` for outputs at the bottom of their
  binade, 0.74 of that on random data: 1.66e-3 for bf16, 2.1e-4 for fp16; the tolerance is
  1.67e-3 and 2.12e-4 at GEMM_K = 576, 1.71e-3 and 2.46e-4 at 4608); for a float32 output,
  ``D`` (1.2e-5 at GEMM_K = 576, 9.4e-5 at 4608).

  It is not a margin over ``u / sqrt(3)``: a kernel that rounds twice (16-bit split-K slices,
  or the bias added after a first rounding) errs about ``sqrt(2)`` times the once-rounded
  reference and must fail, as must one that sums in 16 bits, drops fp16 operands to bf16, or
  rounds a float32 output to 16 bits (tests/verify/test_tolerance.py models each).
"""

from __future__ import annotations

import math
from typing import Any

import numpy

from autoconv.dtypes import rounded
from autoconv.problems.problem import ConvProblem
from autoconv.verify.compare import FLOAT32_TOLERANCE
from autoconv.verify.reference import conv2d_reference, logical_values

#: Unit roundoff of TF32 rounding to nearest: half an ulp of a 10-bit mantissa.
TF32_UNIT_ROUNDOFF = 2.0**-11
#: How far above the expected TF32 error a tf32 result may land (the expectation is already an
#: upper bound: it takes every operand's rounding error at its largest mean square).
TF32_MARGIN = 2.0
#: Products between two truncations of the tensor cores' float32 sums, as the bound counts them:
#: wgmma m64nNk16 truncates once per k step of 16; counting one per 8 (mma.sync's k step) leaves
#: room for an adder that keeps fewer bits than the emulator's model (on the H100, random operands
#: differed from the model by up to 0.7 * 2^-24 of the magnitudes summed).
PRODUCTS_PER_TRUNCATION = 8
#: Roundings to nearest after the chain of truncations: split-K slices added, the bias.
EPILOGUE_ROUNDINGS = 4
#: How far beyond the bound of the float32 sums' error (already an upper estimate: every step
#: loses a whole ulp of a running sum at its rms) a 16-bit problem's sums may be, as TF32_MARGIN.
ACCUMULATION_MARGIN = 2.0
#: A float32 ulp relative to the value it belongs to, at most (a truncation loses less).
FLOAT32_ULP = 2.0**-23
#: Room for the order of two float64 sums. Where no output's sums may cross a rounding boundary
#: (short reductions), the bound is exactly the error of the correctly rounded outputs, so a
#: right kernel's error equals it in exact arithmetic; the check sums the same squares in another
#: order (on the GPU, autoconv.verify.device_sums against CuPy's norm), which differs by about
#: n * 2^-53 (without this room, a right bf16 kernel on an H100 failed with "0.00169 exceeds
#: 0.00169"). 1e-6 of the bound is far above that, and far below what the bound must catch (an
#: output rounded twice errs ~41% more).
NORM_SUMMATION_SLACK = 1e-6


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
        reach = sums_error_bound(problem, x, w, reference, xp)
        return rounding_error_bound(reference, reach, problem.output_dtype, xp)
    return FLOAT32_TOLERANCE


def sums_error_bound(problem: ConvProblem, x, w, reference, xp: Any = numpy):
    """Per output, how far a 16-bit problem's float32 sums may lie from the exact value ``D``
    (:data:`ACCUMULATION_MARGIN` included; see the module docstring), for inputs ``x``, ``w``
    (logical values, or 16-bit buffers) and the float64 ``reference`` of their convolution."""
    x_squared = xp.square(logical_values(problem, "x", x, xp))
    w_squared = xp.square(logical_values(problem, "w", w, xp))
    rms_sum = xp.sqrt(conv2d_reference(problem.with_(bias=False), x_squared, w_squared, None, xp=xp))  # sqrt(Q)
    del x_squared, w_squared
    steps = math.ceil(problem.gemm_k / PRODUCTS_PER_TRUNCATION)
    # sum_{j=1..steps} sqrt(j / steps) <= 2/3 * steps + 1: the running sums' rms, step by step
    truncations = FLOAT32_ULP * (2.0 / 3.0 * steps + 1.0) * rms_sum
    epilogue = EPILOGUE_ROUNDINGS * 2.0**-24 * xp.maximum(rms_sum, xp.abs(reference))
    return ACCUMULATION_MARGIN * (truncations + epilogue)


def rounding_error_bound(reference, reach, dtype: str, xp: Any = numpy) -> float:
    """The relative L2 error of outputs rounded once to nearest in ``dtype`` from sums within
    ``reach`` (per output) of the exact ``reference``: each output's error is at most the larger
    of those of ``round(reference - reach)`` and ``round(reference + reach)`` (rounding is
    monotonic), which is the error of ``round(reference)`` wherever ``reach`` crosses no rounding
    boundary; and :data:`NORM_SUMMATION_SLACK` more, for the order of the L2 norms' sums."""
    reference = xp.asarray(reference, dtype=xp.float64)
    worst = xp.zeros_like(reference)
    for sign in (-1.0, 1.0):
        rounded_sum = xp.asarray(rounded(reference + sign * reach, dtype, xp), dtype=xp.float64)
        worst = xp.maximum(worst, xp.abs(rounded_sum - reference))
    reference_norm = float(xp.linalg.norm(reference.ravel()))
    error = float(xp.linalg.norm(worst.ravel())) * (1.0 + NORM_SUMMATION_SLACK)
    return error / reference_norm if reference_norm > 0 else error
