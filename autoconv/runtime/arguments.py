"""A convolution's arguments as every entry point (CuPy and PyTorch) reads them: what
autoconv.conv2d and the PyTorch operator both refuse, with the same words, and the one
resolver of stride, padding and dilation."""

from __future__ import annotations

from autoconv.errors import ProblemError
from autoconv.problems.problem import INDEX_LIMIT, did_you_mean, same_padding

Pair = tuple[int, int]
Padding = tuple[int, int, int, int]

_PADDING_FORMS = "expected an int, a (height, width) pair, (top, bottom, left, right), 'same' or 'valid'"


def resolve_geometry(stride, padding, dilation, H: int, W: int, R: int, S: int) -> tuple[Pair, Padding, Pair]:
    """(stride pair, (top, bottom, left, right) padding, dilation pair) from arguments as
    :func:`torch.nn.functional.conv2d` takes them, for an ``H`` x ``W`` input and an ``R`` x ``S``
    filter: how :func:`autoconv.conv2d` resolves them, for CuPy arrays and PyTorch tensors alike.

    ``stride`` and ``dilation`` are an int or a (height, width) pair. ``padding`` is an int, a
    (height, width) pair, (top, bottom, left, right), ``'valid'`` (none) or ``'same'``:
    TensorFlow's rule, an output of ``ceil(size / stride)`` with the odd pixel of padding at the
    bottom/right, which for stride 1 is PyTorch's rule too (PyTorch refuses ``'same'`` with a
    stride; autoconv computes it, on both paths). With stride 1 the input size is not read.

    Raises:
        ProblemError: naming the argument that is malformed, or out of range (a stride or dilation
            below 1, a padding below 0), and the forms it takes.
    """
    stride, dilation = _pair("stride", stride), _pair("dilation", dilation)
    if isinstance(padding, str):
        mode = padding.lower()
        if mode not in ("same", "valid"):
            raise ProblemError("padding", padding, _PADDING_FORMS)
        check_geometry(stride, (0, 0, 0, 0), dilation)  # (the 'same' rule divides by the stride)
        if mode == "valid":
            return stride, (0, 0, 0, 0), dilation
        return stride, _same(H, R, stride[0], dilation[0]) + _same(W, S, stride[1], dilation[1]), dilation
    resolved: Padding | None = None
    if _is_int(padding):
        resolved = (padding, padding, padding, padding)
    elif isinstance(padding, (tuple, list)) and all(_is_int(v) for v in padding):
        if len(padding) == 2:
            resolved = (padding[0], padding[0], padding[1], padding[1])
        elif len(padding) == 4:
            resolved = (padding[0], padding[1], padding[2], padding[3])
    if resolved is None:
        raise ProblemError("padding", padding, _PADDING_FORMS)
    check_geometry(stride, resolved, dilation)
    return stride, resolved, dilation


def check_geometry(stride, padding, dilation) -> None:
    """ProblemError unless ``stride`` and ``dilation`` are (height, width) pairs >= 1 and
    ``padding`` is (top, bottom, left, right) >= 0, all at most 2**31 - 1, naming the argument and its axis or side
    (a stride of 0 would divide by zero in the output's size)."""
    for name, values, sides, minimum in (("stride", stride, ("height", "width"), 1),
                                         ("dilation", dilation, ("height", "width"), 1),
                                         ("padding", padding, ("top", "bottom", "left", "right"), 0)):
        if len(values) != len(sides):
            raise ProblemError(name, tuple(values), f"expected {len(sides)} values ({', '.join(sides)})")
        for side, value in zip(sides, values):
            if value < minimum:
                raise ProblemError(f"{name} ({side})", value, f"must be >= {minimum}")
            if value > INDEX_LIMIT:  # (the kernels index with 32-bit integers)
                raise ProblemError(f"{name} ({side})", value, f"must be at most {INDEX_LIMIT}")


def output_size(x_shape: tuple, w_shape: tuple, stride, padding, dilation) -> tuple:
    """(P, Q), the output's height and width, of an (N, C, H, W) input and (K, C, R, S) filters
    with checked ``stride``, ``padding`` (top, bottom, left, right) and ``dilation``.

    Raises:
        ProblemError: naming R or S where the dilated filter is larger than the padded input
            (as :class:`~autoconv.problems.problem.ConvProblem` says it).
    """
    sizes = []
    for field, size, kernel, axis, before, after in (("R", x_shape[2], w_shape[2], 0, padding[0], padding[1]),
                                                     ("S", x_shape[3], w_shape[3], 1, padding[2], padding[3])):
        extent = dilation[axis] * (kernel - 1) + 1
        if extent > size + before + after:
            what = "height" if axis == 0 else "width"
            raise ProblemError(field, kernel, f"filter {what} with dilation ({extent}) exceeds the padded input "
                               f"{what} ({size} + {before + after} padding); use a smaller {field} or dilation, "
                               "or more padding")
        sizes.append((size + before + after - extent) // stride[axis] + 1)
    return sizes[0], sizes[1]


def _same(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """'same' padding of one axis: with stride 1 the total ``dilation * (kernel - 1)`` whatever
    the size (PyTorch's rule, and the size may be symbolic while tracing), else TensorFlow's."""
    if stride == 1:
        total = dilation * (kernel - 1)
        return total // 2, total - total // 2
    return same_padding(size, kernel, stride, dilation)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _pair(name: str, value) -> Pair:
    if _is_int(value):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(_is_int(v) for v in value):
        return (value[0], value[1])
    raise ProblemError(name, value, "expected an int or a (height, width) pair of ints")


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
