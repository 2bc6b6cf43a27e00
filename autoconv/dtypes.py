"""Element types as kernels store them, and a problem's tensors as kernels take them.

Verification works on *values*: float32 arrays in the logical layouts (NCHW input, KCRS weights,
NKPQ output), which the float64 reference reads. Kernels take *buffers*: the problem's layout
in memory (NHWC, KRSC, NPQK for an NHWC problem) and its element type, 16-bit values as their
bit patterns in uint16 arrays (bfloat16: the high half of a float32; float16: IEEE half), since
neither NumPy nor CuPy has a bfloat16 type. :func:`kernel_buffer` turns values into a buffer,
:func:`buffer_values` a buffer back into values; values of a 16-bit problem are first rounded to
its format (:func:`rounded`), so both sides compute from the same numbers.

Every function takes ``xp``, the array module (``numpy`` or ``cupy``), as autoconv.verify does.
"""

from __future__ import annotations

from typing import Any

import numpy

from autoconv.problems.problem import ConvProblem

#: The array dtype of a buffer of each element type.
STORAGE_DTYPES = {"float32": numpy.float32, "bfloat16": numpy.uint16, "float16": numpy.uint16}
#: A NaN in each element type's storage: unwritten outputs read back as NaN.
POISON_BITS = {"float32": float("nan"), "bfloat16": 0xFFFF, "float16": 0xFFFF}


def encode(values, dtype: str, xp: Any = numpy):
    """``values`` (float32) in ``dtype``'s storage, each rounded to nearest, ties to even."""
    values = xp.asarray(values, dtype=xp.float32)
    if dtype == "float32":
        return values
    if dtype == "float16":
        with numpy.errstate(over="ignore"):  # beyond 65504 is infinite, as intended
            return values.astype(xp.float16).view(xp.uint16)
    if dtype == "bfloat16":  # add half an ulp of the high half, plus one when its last bit is odd
        bits = values.view(xp.uint32).astype(xp.uint64)
        rounded = ((bits + 0x7FFF + (bits >> 16 & 1)) >> 16).astype(xp.uint16)
        quiet_nan = ((bits >> 16) & 0x8000 | 0x7FC0).astype(xp.uint16)
        return xp.where(xp.isnan(values), quiet_nan, rounded)
    raise ValueError(f"unknown dtype {dtype!r}")


def decode(stored, dtype: str, xp: Any = numpy):
    """The float32 values of a buffer of ``dtype`` (exact)."""
    if dtype == "float32":
        return xp.asarray(stored, dtype=xp.float32)
    if dtype == "float16":
        return stored.view(xp.float16).astype(xp.float32)
    if dtype == "bfloat16":
        return (stored.astype(xp.uint32) << 16).view(xp.float32)
    raise ValueError(f"unknown dtype {dtype!r}")


def rounded(values, dtype: str, xp: Any = numpy):
    """``values`` rounded to ``dtype`` and back: float32 numbers the format holds exactly."""
    return decode(encode(values, dtype, xp), dtype, xp)


def _storage_order(problem: ConvProblem, name: str) -> tuple[int, ...]:
    return (0,) if name == "bias" else problem.storage_order


def kernel_buffer(problem: ConvProblem, name: str, values, xp: Any = numpy):
    """Tensor ``name`` ("x", "w", "bias") as the problem's kernels take it: from its logical
    float32 values to the problem's layout and element type (contiguous)."""
    values = xp.asarray(values, dtype=xp.float32)
    return xp.ascontiguousarray(encode(values.transpose(_storage_order(problem, name)), problem.dtype, xp))


def output_buffer(problem: ConvProblem, xp: Any = numpy):
    """A buffer for ``y`` in the problem's layout and output type, every element NaN."""
    dtype = problem.output_dtype
    return xp.full(problem.output_storage_shape, POISON_BITS[dtype], dtype=STORAGE_DTYPES[dtype])


def buffer_values(problem: ConvProblem, y, xp: Any = numpy):
    """The float32 values of an output buffer ``y``, in the logical NKPQ layout."""
    values = decode(y, problem.output_dtype, xp)
    inverse = tuple(int(axis) for axis in numpy.argsort(problem.storage_order))
    return values.transpose(inverse)


def random_buffer(problem: ConvProblem, name: str, generator, xp: Any = numpy):
    """Uniform [-1, 1) data for tensor ``name`` as the kernels take it (timing sets: any
    values of the right size and type). ``generator`` is ``xp``'s random generator."""
    shape = {"x": problem.input_storage_shape, "w": problem.weight_storage_shape, "bias": (problem.K,)}[name]
    return encode(generator.random(shape, dtype=xp.float32) * 2 - 1, problem.dtype, xp)
