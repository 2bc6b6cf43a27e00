"""A problem's tensors as its kernels take them, and back.

Verification works on *values*: float32 arrays in the logical layouts (NCHW input, KCRS weights,
NKPQ output), which the float64 reference reads. Kernels take *buffers*: the problem's layout
in memory (NHWC, KRSC, NPQK for an NHWC problem) and its element type (:mod:`autoconv.dtypes`).
:func:`kernel_buffer` turns values into a buffer, :func:`buffer_values` a buffer back into
values; values of a 16-bit problem are first rounded to its format
(:func:`autoconv.dtypes.rounded`), so both sides compute from the same numbers.

Every function takes ``xp``, the array module (``numpy`` or ``cupy``), as autoconv.verify does.
"""

from __future__ import annotations

from typing import Any

import numpy

from autoconv.dtypes import POISON_BITS, STORAGE_DTYPES, decode, encode
from autoconv.problems.problem import ConvProblem


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


def random_buffer(problem: ConvProblem, name: str, generator, xp: Any = numpy):
    """Uniform [-1, 1) data for tensor ``name`` as the kernels take it (timing sets: any
    values of the right size and type). ``generator`` is ``xp``'s random generator."""
    shape = {"x": problem.input_storage_shape, "w": problem.weight_storage_shape, "bias": (problem.K,)}[name]
    return encode(generator.random(shape, dtype=xp.float32) * 2 - 1, problem.dtype, xp)
