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
    """The float32 values of a buffer of ``dtype`` (exact: float32 holds every bfloat16 and
    float16 number, subnormals, infinities and NaN included).

    Raises:
        ValueError: a 16-bit ``dtype`` with ``stored`` not uint16 (values, not bit patterns).
    """
    if dtype == "float32":
        return xp.asarray(stored, dtype=xp.float32)
    if dtype in ("bfloat16", "float16") and numpy.dtype(stored.dtype) != numpy.uint16:
        raise ValueError(f"a {dtype} buffer holds bit patterns (uint16), not {stored.dtype}: values need no "
                         f"decoding")
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
    return tensor_values(problem, "y", y, xp)


def tensor_values(problem: ConvProblem, name: str, buffer, xp: Any = numpy):
    """The float32 values of tensor ``name`` ("x", "w", "bias", "y") from its buffer as the
    kernels take it (the problem's layout and element type; ``y`` in the output's type), in the
    logical layout (NCHW, KCRS, NKPQ): a transposed view where the layout is NHWC.

    Raises:
        ValueError: the buffer's shape is not the tensor's in the problem's layout.
    """
    expected = {"x": problem.input_storage_shape, "w": problem.weight_storage_shape, "bias": (problem.K,),
                "y": problem.output_storage_shape}[name]
    if tuple(buffer.shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(buffer.shape)}; a {problem.layout} {name} buffer of the problem "
                         f"is {tuple(expected)}")
    values = decode(buffer, problem.output_dtype if name == "y" else problem.dtype, xp)
    inverse = tuple(int(axis) for axis in numpy.argsort(_storage_order(problem, name)))
    return values.transpose(inverse)


def holds_exactly(values, dtype: str, xp: Any = numpy) -> bool:
    """Whether every one of ``values`` is a number of ``dtype`` (rounding leaves it unchanged;
    NaN counts as held)."""
    values = xp.asarray(values)
    return bool(xp.all((rounded(values, dtype, xp) == values) | xp.isnan(values)))


def random_buffer(problem: ConvProblem, name: str, generator, xp: Any = numpy):
    """Uniform [-1, 1) data for tensor ``name`` as the kernels take it (timing sets: any
    values of the right size and type). ``generator`` is ``xp``'s random generator."""
    shape = {"x": problem.input_storage_shape, "w": problem.weight_storage_shape, "bias": (problem.K,)}[name]
    return encode(generator.random(shape, dtype=xp.float32) * 2 - 1, problem.dtype, xp)
