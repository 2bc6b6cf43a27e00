"""``autoconv.torch.conv2d``: :func:`torch.nn.functional.conv2d`'s signature, autoconv's kernels.

    y = autoconv.torch.conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
                              out=None, precision=None)

``padding`` is an int, a (height, width) pair, a (top, bottom, left, right) 4-tuple,
``'valid'``, or ``'same'``: with stride 1 PyTorch's rule (total padding ``dilation * (kernel -
1)``, the odd element at the bottom/right); with a stride, where PyTorch refuses it, TensorFlow's
(an output of ``ceil(size / stride)``), as :func:`autoconv.conv2d` computes it for CuPy arrays
(:func:`autoconv.runtime.arguments.resolve_geometry`, for both). ``groups`` must be 1.
Inputs are CUDA tensors on one device, all float32, all bfloat16 or all float16. float32
kernels read NCHW: a non-contiguous or channels_last input is copied to contiguous NCHW first;
except in precision tf32 on a Hopper GPU, where a channels_last float32 input is read as it is by
NHWC kernels, which write a channels_last output (:func:`autoconv.torch.layouts.kernel_layout`).
bfloat16 and float16 kernels read NHWC (KRSC weights) and write channels_last outputs:
channels_last inputs and weights (``model.to(memory_format=torch.channels_last)``) are read
without a copy, others are copied to channels_last first. Under ``torch.autocast`` (CUDA),
float32 arguments are cast to the autocast dtype first, as PyTorch's own convolution's are:
eager calls here, traced calls (``torch.compile``) and direct calls of the operator by its
autocast kernel.

``precision`` is for float32 tensors: ``"fp32"`` (float32 accuracy), ``"tf32"`` (inputs rounded
to TF32, one tensor-core product per multiply, float32 accumulation) or None: what PyTorch does for its
own cuDNN convolutions, read when the call is made (:func:`pytorch_precision`: ``"tf32"``
where ``torch.backends.cudnn.conv.fp32_precision == "tf32"``, or ``allow_tf32`` before that
existed; PyTorch's default allows TF32). The precision picks the kernel (tf32 and fp32 are
tuned and cached apart); the backward is PyTorch's and follows PyTorch's setting. bfloat16 and
float16 tensors compute in ``"bf16"`` / ``"fp16"`` (float32 sums, one rounding to their type)
whatever the float32 setting is, as PyTorch's do; ``precision`` may name that one, no other.
Under ``torch.compile`` and ``torch.export`` the precision resolved when tracing is baked
into the graph as a constant: changing PyTorch's flag afterwards does not retrace, so set
the flag before compiling, or pass ``precision`` explicitly.

Eager calls on CUDA tensors go straight to the operator's CUDA implementation, through
:class:`~autoconv.torch.ops.EagerConv2d` when they need gradients (or the C++ node of
:mod:`autoconv.torch.native` where ``AUTOCONV_NATIVE_AUTOGRAD=on``): the dispatcher and
``register_autograd``'s generic Python wrapper cost 8-24 us more per call on the H100
(``examples/host_cost.py``) and add nothing there. Traced calls (``torch.compile``,
``torch.export``), tensor subclasses, meta and CPU tensors call the operator
``torch.ops.autoconv.conv2d``.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from autoconv.errors import ProblemError
from autoconv.runtime.arguments import check_precision, check_shapes, resolve_geometry
from autoconv.torch import native, ops
from autoconv.torch.settings import pytorch_precision

_Tensor = torch.Tensor


def conv2d(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1, *, out: torch.Tensor | None = None,
           precision: str | None = None) -> torch.Tensor:
    """``y = conv2d(x, w) + bias`` with autoconv's tuned kernel (see the module docstring).

    Args:
        x: (N, C, H, W) CUDA tensor: float32, bfloat16 or float16 (channels_last for 16-bit, or copied).
        w: (K, C, R, S) CUDA tensor of x's dtype on x's device.
        bias: optional (K,) tensor of x's dtype.
        stride, dilation: an int or a (height, width) pair.
        padding: an int, a pair, (top, bottom, left, right), ``'same'`` or ``'valid'``.
        groups: must be 1.
        out: optional (N, K, P, Q) tensor to write (no autograd): contiguous float32, or
            channels_last in x's dtype where the kernels write NHWC (16-bit inputs; tf32 on a
            channels_last float32 x on Hopper).
        precision: for float32 tensors ``"fp32"``, ``"tf32"``, or None for PyTorch's setting for
            cuDNN convolutions (:func:`pytorch_precision`, read per call; baked in when traced);
            16-bit tensors compute in their own precision (``"bf16"``/``"fp16"``, or None).

    Returns:
        y, (N, K, P, Q) on x's device, in x's dtype (channels_last where the kernels write NHWC).

    Raises:
        ProblemError: naming the argument that is wrong and how to fix it.
    """
    if not (isinstance(x, _Tensor) and isinstance(w, _Tensor) and (bias is None or isinstance(bias, _Tensor))):
        _refuse_non_tensors(x, w, bias)
    if x.dim() != 4 or w.dim() != 4:  # (the sizes are read below, before the operator checks the shapes)
        check_shapes(tuple(x.shape), tuple(w.shape), None)
    if groups != 1:
        raise ProblemError("groups", groups, "autoconv computes groups=1 convolutions only; leave grouped and "
                           "depthwise convolutions to torch.nn.functional.conv2d")
    if torch.compiler.is_compiling():  # traced: one operator node (Dynamo would skip resolve's cache)
        precision = _traced_precision() if precision is None else check_precision(precision)
        stride, padding, dilation = resolve_geometry(stride, padding, dilation, x.shape[2], x.shape[3],
                                                     w.shape[2], w.shape[3])
        return torch.ops.autoconv.conv2d(x, w, bias, stride, padding, dilation, precision)
    precision = pytorch_precision() if precision is None else check_precision(precision)
    if _autocast_enabled("cuda"):
        x, w, bias = _autocast(x, w, bias)
    stride, padding, dilation = resolve(_key(stride), _key(padding), _key(dilation), x.shape[2], x.shape[3],
                                        w.shape[2], w.shape[3])
    if out is not None:
        if not isinstance(out, _Tensor):
            raise ProblemError("out", type(out).__name__, "expected a tensor to write y into, or None")
        return _into(out, x, w, bias, stride, padding, dilation, precision)
    if type(x) is not _Tensor or not x.is_cuda:  # subclasses, meta and CPU tensors: the dispatcher decides
        return torch.ops.autoconv.conv2d(x, w, bias, stride, padding, dilation, precision)
    if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or (bias is not None and bias.requires_grad)):
        if native.wanted():
            y = native.conv2d(x, w, bias, stride, padding, dilation, precision)
            if y is not None:
                return y
        return ops.EagerConv2d.apply(x, w, bias, stride, padding, dilation, precision)
    return ops.conv2d_cuda(x, w, bias, stride, padding, dilation, precision)


def _refuse_non_tensors(x, w, bias) -> None:
    """ProblemError naming the first of ``x``, ``w`` and ``bias`` that is not a tensor."""
    for name, value, shape in (("x", x, "(N, C, H, W)"), ("w", w, "(K, C, R, S)"), ("bias", bias, "(K,)")):
        if not (isinstance(value, _Tensor) or (name == "bias" and value is None)):
            raise ProblemError(name, value, f"expected a {shape} torch.Tensor on a CUDA device"
                               + (" (or None)" if name == "bias" else ""))


_FLOAT32 = torch.float32
_autocast_enabled = torch.is_autocast_enabled


def _autocast(x, w, bias):
    """x, w and bias in the autocast dtype of CUDA, as autocast casts PyTorch's convolution's
    arguments (a layer's float32 weights, and its input where the layer before was not cast)."""
    dtype = torch.get_autocast_dtype("cuda")
    kept = ops.CAST_PARAMETERS
    return (x.to(dtype) if ops.autocast_casts(x, dtype) else x, kept.get(w, dtype),
            None if bias is None else kept.get(bias, dtype))


@torch.compiler.assume_constant_result
def _traced_precision() -> str:
    """:func:`pytorch_precision` for tracing: Dynamo cannot trace PyTorch's getter, so its
    result is taken as a constant of the graph (no guard: a later change of the flag does not
    recompile)."""
    return pytorch_precision()


def _key(value):
    return tuple(value) if isinstance(value, list) else value


#: :func:`autoconv.runtime.arguments.resolve_geometry` remembered: an eager model repeats its
#: layers' arguments at every call (hashable ones: lists are made tuples first).
resolve = lru_cache(maxsize=1024)(resolve_geometry)


def _into(out, x, w, bias, stride, padding, dilation, precision) -> torch.Tensor:
    if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or (bias is not None and bias.requires_grad)):
        raise ProblemError("out", "given", "out= computes no gradient; call without out= for autograd")
    if ops.kernel_layout(x, precision) == "NCHW":
        if out.dtype is not _FLOAT32 or not out.is_contiguous() or out.device != x.device:
            raise ProblemError("out", f"{out.dtype} on {out.device}",
                               f"out must be a contiguous float32 tensor on {x.device}")
    elif (out.dtype is not x.dtype or not out.is_contiguous(memory_format=torch.channels_last)
          or out.device != x.device):
        raise ProblemError("out", f"{out.dtype} on {out.device}",
                           f"out must be a channels_last {str(x.dtype).replace('torch.', '')} tensor on {x.device} "
                           "(torch.empty(..., memory_format=torch.channels_last)): the kernels write NHWC here")
    expected = tuple(ops.conv2d_fake(x, w, bias, stride, padding, dilation, precision).shape)
    if tuple(out.shape) != expected:
        raise ProblemError("out.shape", tuple(out.shape), f"expected {expected} for this convolution")
    return ops.conv2d_cuda(x, w, bias, stride, padding, dilation, precision, out=out)
