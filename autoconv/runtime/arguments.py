"""Checks of a convolution's arguments shared by every entry point (CuPy and PyTorch):
what autoconv.conv2d and the PyTorch operator both refuse, with the same words."""

from __future__ import annotations

from autoconv.errors import ProblemError


def check_shapes(x_shape: tuple, w_shape: tuple, bias_shape: tuple | None) -> None:
    """ProblemError unless x is (N, C, H, W), w is (K, C, R, S) and bias is (K,)."""
    if len(x_shape) != 4:
        raise ProblemError("x.shape", x_shape, "expected 4 dimensions (N, C, H, W)")
    if len(w_shape) != 4:
        raise ProblemError("w.shape", w_shape, "expected 4 dimensions (K, C, R, S)")
    if x_shape[1] != w_shape[1]:
        raise ProblemError("w.shape", w_shape,
                           f"w has {w_shape[1]} input channels but x has {x_shape[1]} (x is N, C, H, W "
                           "and w is K, C, R, S; groups are not supported)")
    if bias_shape is not None and bias_shape != (w_shape[0],):
        raise ProblemError("bias.shape", bias_shape, f"expected ({w_shape[0]},): one value per filter")
