"""The reference convolution every kernel is checked against, in float64.

Written from the definition in :mod:`autoconv.problems.problem`, independently of the templates:
the input is zero-padded (each side by its own amount), and for every filter tap (r, s)
the strided, dilated window of the padded input that the tap sees is a plain slice
``x_padded[:, :, r*dh : ... : sh, s*dw : ... : sw]`` of shape N x C x P x Q, contracted
with ``w[:, :, r, s]`` over C by ``tensordot`` (a matrix product, in float64). Summing the
R*S products gives y. No im2col matrix is built, so memory stays at a few copies of x.

The functions are array-module generic: pass ``xp=cupy`` with CuPy arrays and the same
code runs on the GPU (the tuner verifies there); only functions NumPy and CuPy share are
used.
"""

from __future__ import annotations

from typing import Any

import numpy

from autoconv.problems.problem import ConvProblem


def conv2d_reference(problem: ConvProblem, x, w, bias=None, xp: Any = numpy):
    """``y = conv2d(x, w) + bias`` for ``problem``, computed in float64.

    Args:
        problem: sizes, stride, dilation and (top, bottom, left, right) padding; NCHW
            input, KCRS weights.
        x: input of shape ``problem.input_shape`` (any float dtype; promoted to float64).
        w: weights of shape ``problem.weight_shape``.
        bias: ``(K,)`` values added per output channel, or None.
        xp: the array module of ``x`` and ``w`` (``numpy`` or ``cupy``).

    Returns:
        float64 array of shape ``problem.output_shape``.

    Raises:
        ValueError: an array's shape disagrees with the problem (naming which and how).
    """
    _check_shape("x", x, problem.input_shape)
    _check_shape("w", w, problem.weight_shape)
    if bias is not None:
        _check_shape("bias", bias, (problem.K,))
    if problem.layout != "NCHW":
        raise ValueError(f"conv2d_reference implements layout NCHW, not {problem.layout}")

    top, bottom, left, right = problem.padding
    stride_h, stride_w = problem.stride
    dilation_h, dilation_w = problem.dilation
    x64 = xp.asarray(x, dtype=xp.float64)
    w64 = xp.asarray(w, dtype=xp.float64)
    padded = xp.pad(x64, ((0, 0), (0, 0), (top, bottom), (left, right)))

    # Accumulated as K x N x P x Q (tensordot puts w's remaining axis first).
    y = xp.zeros((problem.K, problem.N, problem.P, problem.Q), dtype=xp.float64)
    for r in range(problem.R):
        h0 = r * dilation_h  # padded row that output row 0 reads through tap r
        rows = slice(h0, h0 + (problem.P - 1) * stride_h + 1, stride_h)
        for s in range(problem.S):
            w0 = s * dilation_w
            cols = slice(w0, w0 + (problem.Q - 1) * stride_w + 1, stride_w)
            window = padded[:, :, rows, cols]  # N x C x P x Q: what tap (r, s) multiplies
            y += xp.tensordot(w64[:, :, r, s], window, axes=([1], [1]))
    y = xp.ascontiguousarray(y.transpose(1, 0, 2, 3))
    if bias is not None:
        y += xp.asarray(bias, dtype=xp.float64).reshape(1, problem.K, 1, 1)
    return y


def random_inputs(problem: ConvProblem, rng: numpy.random.Generator):
    """Float32 ``(x, w, bias)`` for ``problem``, uniform in [-1, 1); bias is None unless
    the problem has one. Signed values of similar size: a wrong index or a dropped term
    changes the result by far more than float32 rounding, and no tensor is all zeros.
    """
    x = rng.uniform(-1.0, 1.0, problem.input_shape).astype(numpy.float32)
    w = rng.uniform(-1.0, 1.0, problem.weight_shape).astype(numpy.float32)
    bias = rng.uniform(-1.0, 1.0, (problem.K,)).astype(numpy.float32) if problem.bias else None
    return x, w, bias


def _check_shape(name: str, array, expected: tuple[int, ...]) -> None:
    if tuple(array.shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(array.shape)}; the problem needs {tuple(expected)}")
