"""Which layout autoconv's kernels compute a call in: the rule the operator's CUDA kernel, its fake
implementation, Inductor's layout constraint (:mod:`autoconv.torch.inductor`) and ``tune --model
--compile`` share."""

from __future__ import annotations

import functools

import torch

#: The precision of each 16-bit dtype's convolutions (computed in NHWC, whatever x's layout).
SIXTEEN_BIT_PRECISIONS = {torch.bfloat16: "bf16", torch.float16: "fp16"}

#: Compute capabilities with a family that computes tf32 in NHWC (implicit_gemm_wgmma_tma's
#: search space: sm_90a, Hopper).
NHWC_TF32_CAPABILITIES = {(9, 0)}


@functools.cache
def computes_tf32_in_nhwc(device: int) -> bool:
    """Whether CUDA device ``device`` has a family that computes tf32 in NHWC (read once)."""
    return torch.cuda.get_device_capability(device) in NHWC_TF32_CAPABILITIES


def computes_nhwc(dtype: torch.dtype, precision: str, device: int | None) -> bool:
    """Whether calls on ``dtype`` tensors at ``precision`` run NHWC kernels when x is channels_last:
    16-bit tensors always, float32 ones at tf32 where CUDA device ``device`` has a family that
    computes tf32 in NHWC (None: assume it has)."""
    if dtype in SIXTEEN_BIT_PRECISIONS:
        return True
    return (dtype is torch.float32 and precision == "tf32"
            and (device is None or computes_tf32_in_nhwc(device)))


def is_channels_last(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is laid out channels_last and not also contiguous (a tensor of one
    channel or one pixel is both, and counts as NCHW)."""
    return (tensor.dim() == 4 and not tensor.is_contiguous()
            and tensor.is_contiguous(memory_format=torch.channels_last))


def kernel_layout(x: torch.Tensor, precision: str) -> str:
    """The layout autoconv's kernels read ``x`` (and write ``y``) in: "NHWC" for 16-bit tensors,
    and for tf32 calls on a float32 ``x`` in channels_last (only: a tensor that is both, one
    channel or one pixel, counts as NCHW) on a GPU where a family computes tf32 in NHWC; else
    "NCHW". The fake implementation gives the output this layout's memory format."""
    if x.dtype in SIXTEEN_BIT_PRECISIONS:
        return "NHWC"
    if x.is_cuda and is_channels_last(x) and computes_nhwc(x.dtype, precision, x.get_device()):
        return "NHWC"
    return "NCHW"


def compiled_layout(precision: str, device: int | None = None) -> str:
    """The layout a compiled graph's calls of ``precision`` run in (``"NHWC"`` or ``"NCHW"``): the
    problems ``tune --model --compile`` tunes, since Inductor hands the operator channels_last
    tensors wherever it computes NHWC. ``device``: the CUDA device the graph runs on (its compute
    capability decides tf32); None: a GPU with an NHWC tf32 family."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
    return "NHWC" if computes_nhwc(dtype, precision, device) else "NCHW"
