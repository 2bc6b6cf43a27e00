"""The reference convolution every kernel is checked against, in float64.

Written from the definition in :mod:`autoconv.problems.problem`, independently of the templates:
for every filter tap (r, s), the strided, dilated window of the zero-padded input that the
tap sees is an N x C x P x Q array (zero where it reads padding, a strided slice of x
elsewhere), contracted with ``w[:, :, r, s]`` over C by ``tensordot`` (a matrix product, in
float64). Summing the R*S products gives y. Neither an im2col matrix nor the padded input is
built (padding may be as large as the 32-bit limit), so memory stays at a few copies of x
and of the output.

The functions are array-module generic: pass ``xp=cupy`` with CuPy arrays and the same
code runs on the GPU (the tuner verifies there); only functions NumPy and CuPy share are
used.
"""

from __future__ import annotations

from typing import Any

import numpy

from autoconv.dtypes import rounded
from autoconv.problems.buffers import tensor_values
from autoconv.problems.problem import ConvProblem, ceil_div


def conv2d_reference(problem: ConvProblem, x, w, bias=None, xp: Any = numpy):
    """``y = conv2d(x, w) + bias`` for ``problem``, computed in float64.

    Args:
        problem: sizes, stride, dilation and (top, bottom, left, right) padding. Values are
            logical (NCHW input, KCRS weights, NKPQ result) whatever the problem's layout:
            :mod:`autoconv.problems.buffers` moves values between these and the kernels' buffers.
        x: input values of shape ``problem.input_shape`` (any float dtype; promoted to
            float64), or a 16-bit problem's input buffer as its kernels take it (uint16 bit
            patterns in the problem's layout, :func:`autoconv.problems.buffers.kernel_buffer`).
        w: weights of shape ``problem.weight_shape``, or a 16-bit problem's weights buffer.
        bias: ``(K,)`` values (or bit patterns) added per output channel, or None.
        xp: the array module of ``x`` and ``w`` (``numpy`` or ``cupy``).

    Returns:
        float64 array of shape ``problem.output_shape`` (logical: compare a kernel's output
        through :func:`autoconv.problems.buffers.buffer_values`).

    Raises:
        ValueError: an array's shape disagrees with the problem (naming which and how).
    """
    x64 = logical_values(problem, "x", x, xp)
    w64 = logical_values(problem, "w", w, xp)
    if bias is not None:
        bias = logical_values(problem, "bias", bias, xp)
    top, _, left, _ = problem.padding

    # Accumulated as K x N x P x Q (tensordot puts w's remaining axis first).
    y = xp.zeros((problem.K, problem.N, problem.P, problem.Q), dtype=xp.float64)
    window = xp.zeros((problem.N, problem.C, problem.P, problem.Q), dtype=xp.float64)
    for r in range(problem.R):
        rows_out, rows_in = _inside(problem.P, problem.stride[0], r * problem.dilation[0] - top,
                                    problem.H)
        if rows_out is None:
            continue
        for s in range(problem.S):
            cols_out, cols_in = _inside(problem.Q, problem.stride[1],
                                        s * problem.dilation[1] - left, problem.W)
            if cols_out is None:
                continue
            window[...] = 0  # N x C x P x Q: what tap (r, s) multiplies; padding reads zero
            window[:, :, rows_out, cols_out] = x64[:, :, rows_in, cols_in]
            y += xp.tensordot(w64[:, :, r, s], window, axes=([1], [1]))
    y = xp.ascontiguousarray(y.transpose(1, 0, 2, 3))
    if bias is not None:
        y += xp.asarray(bias, dtype=xp.float64).reshape(1, problem.K, 1, 1)
    return y


def logical_values(problem: ConvProblem, name: str, array, xp: Any = numpy):
    """Tensor ``name`` ("x", "w" or "bias") of ``problem`` as float64 values in its logical
    layout (NCHW, KCRS): ``array`` itself when it holds values of that shape (any float dtype),
    or, when it is a 16-bit problem's buffer (uint16 bit patterns in the problem's layout, as
    its kernels take it), those decoded exactly and put in logical order (no copy is made of
    float64 values: do not write to the result).

    Raises:
        ValueError: the shape disagrees with the problem, or bit patterns for a float32 problem.
    """
    if numpy.dtype(array.dtype) == numpy.uint16:  # bits: nothing else autoconv passes is uint16
        if problem.dtype == "float32":
            raise ValueError(f"{name} is uint16, but a float32 problem's {name} holds float values")
        return xp.asarray(tensor_values(problem, name, array, xp), dtype=xp.float64)
    _check_shape(name, array, {"x": problem.input_shape, "w": problem.weight_shape, "bias": (problem.K,)}[name])
    return xp.asarray(array, dtype=xp.float64)


def _inside(outputs: int, stride: int, first: int, size: int) -> tuple[slice, slice] | tuple[None, None]:
    """The outputs o = 0 .. outputs-1 whose input position ``first + o*stride`` lies in
    [0, size), as a slice of the outputs and the matching strided slice of the input; or
    (None, None) when none does. The padding is never materialized (it may be ~2^31)."""
    lo = ceil_div(-first, stride) if first < 0 else 0  # the first o with position >= 0
    hi = min(outputs - 1, (size - 1 - first) // stride)  # the last with position < size
    if hi < lo:
        return None, None
    start = first + lo * stride
    return slice(lo, hi + 1), slice(start, start + (hi - lo) * stride + 1, stride)


def random_inputs(problem: ConvProblem, rng, xp: Any = numpy):
    """Float32 ``(x, w, bias)`` for ``problem`` (logical layouts), uniform in [-1, 1) and, for
    a 16-bit problem, rounded to its format, so that the reference computes from the very
    numbers the kernels read; bias is None unless the problem has one. Signed values of
    similar size: a wrong index or a dropped term changes the result by far more than
    rounding, and no tensor is all zeros.

    ``rng`` is a random generator of ``xp``: ``numpy.random.default_rng(seed)``, or with
    ``xp=cupy`` ``cupy.random.default_rng(seed)`` (the tuner's GPU workers: the same seed
    makes other numbers than NumPy's, the same ones in every process).
    """
    x = _uniform(rng, problem.input_shape)
    w = _uniform(rng, problem.weight_shape)
    bias = _uniform(rng, (problem.K,)) if problem.bias else None
    if problem.dtype != "float32":
        x, w = rounded(x, problem.dtype, xp), rounded(w, problem.dtype, xp)
        bias = rounded(bias, problem.dtype, xp) if bias is not None else None
    return x, w, bias


def _uniform(rng, shape: tuple[int, ...]):
    """Uniform [-1, 1) float32 values of ``shape`` from ``rng``, scaled in place (a layer's input
    at batch 256 is up to 0.8 GB: no float64 or temporary copy of it)."""
    values = rng.random(shape, dtype=numpy.float32)
    values *= 2
    values -= 1
    return values


def _check_shape(name: str, array, expected: tuple[int, ...]) -> None:
    if tuple(array.shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(array.shape)}; the problem needs {tuple(expected)}")
