"""Is a kernel's output right? A comparison with the float64 reference.

Outputs are filled with :data:`POISON` (NaN) before a kernel runs, so an element the kernel
never writes stays NaN and fails here; so does any NaN or infinity the kernel computes.
Otherwise the output passes when its relative L2 error, ``||out - ref|| / ||ref||``, is at
most the tolerance (:mod:`autoconv.verify.tolerance` gives each precision's): 1e-5 for
float32, well above the rounding of a float32 reduction over thousands of terms (~1e-7 to
1e-6) and far below what a wrong index or a dropped term costs (~1e-2 and up).

Array-module generic: ``out`` and ``ref`` may be NumPy or CuPy arrays (the GPU tuner
compares on the device, with the kernels of :mod:`autoconv.verify.device_sums`, which compile
once whatever the sizes); scalars are brought to the host with ``float()``/``int()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy

#: What outputs and workspaces are filled with before a kernel runs.
POISON = float("nan")

#: Relative L2 error a float32 result may have.
FLOAT32_TOLERANCE = 1e-5


@dataclass(frozen=True)
class VerifyOutcome:
    """The verdict on one output: ``ok``, its relative L2 ``error`` (``inf`` when the output
    cannot be compared: wrong shape, NaN or infinity) and a one-line ``message`` saying why."""

    ok: bool
    error: float
    message: str


def array_module(array) -> Any:
    """``cupy`` for a CuPy array, ``numpy`` otherwise (without importing CuPy needlessly)."""
    if type(array).__module__.split(".")[0] == "cupy":
        import cupy
        return cupy
    return numpy


def comparison_sums(out, ref) -> tuple[int, float, float]:
    """How many values of ``out`` are NaN or infinite, the sum of ``(out - ref)**2`` over its
    finite values and the sum of ``ref**2``, in float64 (same shapes)."""
    if array_module(out) is not numpy:
        from autoconv.verify.device_sums import comparison_sums as on_the_device
        return on_the_device(out, ref)
    out = numpy.asarray(out, dtype=numpy.float64).ravel()
    ref = numpy.asarray(ref, dtype=numpy.float64).ravel()
    finite = numpy.isfinite(out)
    with numpy.errstate(invalid="ignore"):  # (inf - inf: left out by the mask)
        difference = numpy.where(finite, out - ref, 0.0)
    return int(out.size - numpy.count_nonzero(finite)), float(difference @ difference), float(ref @ ref)


def same_bits(a, b) -> bool:
    """Whether arrays ``a`` and ``b`` (C-contiguous) hold the same bytes (an input a kernel must
    not write, against its copy; NaN payloads count)."""
    if array_module(a) is not numpy:
        from autoconv.verify.device_sums import differing_words
        return differing_words(a, b) == 0
    return a.nbytes == b.nbytes and bytes(numpy.ascontiguousarray(a).data) == bytes(numpy.ascontiguousarray(b).data)


def relative_l2_error(out, ref) -> float:
    """``||out - ref||_2 / ||ref||_2`` in float64 (the absolute error when ``ref`` is all
    zeros, so that an all-zero reference is matched only by zeros; infinite when ``out`` holds
    a NaN or an infinity)."""
    nonfinite, difference_squares, reference_squares = comparison_sums(out, ref)
    return _relative_error(nonfinite, difference_squares, reference_squares)


def _relative_error(nonfinite: int, difference_squares: float, reference_squares: float) -> float:
    if nonfinite:
        return math.inf
    error = math.sqrt(difference_squares)
    return error / math.sqrt(reference_squares) if reference_squares > 0 else error


def check_result(out, ref, tolerance: float = FLOAT32_TOLERANCE) -> VerifyOutcome:
    """Compare a kernel's output with the reference.

    Fails on a shape mismatch, on any NaN or infinity in ``out`` (an unwritten, still
    poisoned element, or an overflow), and on a relative L2 error above ``tolerance``.
    The message locates the first bad element and the largest difference.
    """
    if tuple(out.shape) != tuple(ref.shape):
        return VerifyOutcome(False, float("inf"),
                             f"output shape {tuple(out.shape)} differs from the reference's {tuple(ref.shape)}")
    xp = array_module(out)
    bad, difference_squares, reference_squares = comparison_sums(out, ref)
    if bad:
        first = _index(int(xp.argmax(~xp.isfinite(out).ravel())), out.shape)
        value = float(out[first])
        return VerifyOutcome(False, float("inf"),
                             f"{bad} of {out.size} output elements are NaN or infinite (first at "
                             f"{list(first)}: {value}); NaN means never written (outputs are poisoned "
                             f"with NaN before the kernel runs) or computed from unwritten memory")
    error = _relative_error(bad, difference_squares, reference_squares)
    if error > tolerance:
        diff = xp.abs(xp.asarray(out, dtype=xp.float64) - ref)
        worst = _index(int(xp.argmax(diff.ravel())), out.shape)
        return VerifyOutcome(False, error,
                             f"relative L2 error {error:.3g} exceeds {tolerance:.3g}; largest difference at "
                             f"{list(worst)}: {float(out[worst]):.6g} instead of {float(ref[worst]):.6g}")
    return VerifyOutcome(True, error, f"relative L2 error {error:.3g} <= {tolerance:.3g}")


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The multi-index of a C-order flat index (as plain ints, for messages)."""
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))
