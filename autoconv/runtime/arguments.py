"""Checks of a convolution's arguments shared by every entry point (CuPy and PyTorch):
what autoconv.conv2d and the PyTorch operator both refuse, with the same words."""

from __future__ import annotations

from autoconv.errors import ProblemError
from autoconv.problems.problem import did_you_mean


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


#: The precisions conv2d computes: fp32 and tf32 on float32 tensors, bf16 and fp16 on PyTorch
#: bfloat16 / float16 tensors (whose dtype decides: PyTorch's float32 settings do not apply).
RUNTIME_PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
_MEANINGS = ("'fp32' (float32 accuracy), 'tf32' (inputs rounded to TF32, float32 accumulation), 'bf16' or "
             "'fp16' (bfloat16 / float16 tensors, float32 accumulation)")


def check_precision(precision, *, none_allowed: bool = True) -> str:
    """``precision`` if it is one of :data:`RUNTIME_PRECISIONS`, else ProblemError naming the
    field and the values allowed. Where the caller takes None (``none_allowed``: PyTorch's
    setting for PyTorch tensors, "fp32" otherwise; the caller resolves it before this), the
    message says so."""
    if isinstance(precision, str) and precision in RUNTIME_PRECISIONS:
        return precision
    hint = ""
    if isinstance(precision, str):
        hint = {"ieee": " (PyTorch's 'ieee' is autoconv's 'fp32')", "highest": " (use 'fp32')",
                "high": " (use 'tf32')"}.get(precision.lower(), did_you_mean(precision, RUNTIME_PRECISIONS))
    allowed = _MEANINGS
    if none_allowed:
        allowed += (" or None (PyTorch tensors: the tensors' dtype, and for float32 PyTorch's setting for cuDNN "
                    "convolutions, torch.backends.cudnn.conv.fp32_precision; other arrays: 'fp32')")
    raise ProblemError("precision", precision, f"expected {allowed}{hint}")
