"""The convolution problem: its sizes, output shape, FLOPs, bytes and identity.

A problem is one forward 2-D convolution

    y[n, k, p, q] = bias[k] + sum_{c, r, s} x[n, c, h, w] * w[k, c, r, s]
    with h = p * stride_h - pad_top  + r * dilation_h
         w = q * stride_w - pad_left + s * dilation_w

(elements of x outside the image read as zero). Every derived quantity (output size,
FLOPs, bytes, the key that identifies a problem in caches and studies) is computed
here and only here.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from autoconv.errors import ProblemError

#: Bytes per element of each element type a problem may name.
DTYPE_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2}
#: Tensor layouts a problem may name: activations NCHW (weights KCRS) or NHWC (weights KRSC).
LAYOUTS = ("NCHW", "NHWC")
#: How a problem multiplies. For float32 tensors, after PyTorch's
#: ``torch.backends.cudnn.conv.fp32_precision`` ("ieee" / "tf32"; ``allow_tf32`` in older versions):
#: ``fp32`` float32 accuracy (float32 FMAs, or tensor cores with the 3xTF32 split), ``tf32`` inputs
#: rounded to TF32 (10 mantissa bits), one tensor-core product per multiply, float32 accumulation.
#: For 16-bit tensors, as ``torch.autocast`` runs convolutions: ``bf16`` / ``fp16`` inputs and
#: weights in bfloat16 / IEEE half, exact products, float32 accumulation, the output rounded once
#: to its dtype (16-bit, or float32 where ``out_dtype`` says so).
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
#: The dtype of the input and weights of each precision.
PRECISION_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}
#: The precision a dtype implies when a problem names only its dtype.
DTYPE_PRECISIONS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
#: Kernels index tensors with 32-bit signed integers.
INDEX_LIMIT = 2**31 - 1

SIZE_FIELDS = ("N", "C", "H", "W", "K", "R", "S")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TensorFlow's SAME rule along one axis: output = ceil(size / stride).

    The total padding is whatever makes the last window end at the last needed input
    element; the odd pixel goes to the end (bottom/right), as in TensorFlow.
    """
    out = ceil_div(size, stride)
    extent = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


@dataclass(frozen=True)
class ConvProblem:
    """A forward 2-D convolution. Sizes use the usual names:

    N batch, C input channels, H x W input image, K output channels (filters),
    R x S filter, P x Q output image (derived). Pairs are (height, width);
    ``padding`` is (top, bottom, left, right).
    """

    N: int
    C: int
    H: int
    W: int
    K: int
    R: int
    S: int
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    bias: bool = False
    dtype: str = "float32"
    layout: str = "NCHW"
    precision: str = "fp32"
    #: The output's dtype when it is not ``dtype``: float32 for a 16-bit problem whose sums are
    #: kept unrounded (None: the output has the inputs' dtype).
    out_dtype: str | None = None

    def __post_init__(self) -> None:
        for name in SIZE_FIELDS:
            _check_positive_int(name, getattr(self, name))
        for name, pair in (("stride", self.stride), ("dilation", self.dilation)):
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise ProblemError(name, pair, "expected a (height, width) pair")
            for axis, value in zip(("height", "width"), pair):
                _check_positive_int(f"{name} ({axis})", value)
        if not (isinstance(self.padding, tuple) and len(self.padding) == 4):
            raise ProblemError("padding", self.padding, "expected (top, bottom, left, right)")
        for side, value in zip(("top", "bottom", "left", "right"), self.padding):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ProblemError(f"padding ({side})", value, "must be an integer >= 0")
        if not isinstance(self.bias, bool):
            raise ProblemError("bias", self.bias, "must be true or false")
        if self.dtype not in DTYPE_SIZES:
            raise ProblemError("dtype", self.dtype, f"must be one of {', '.join(DTYPE_SIZES)}")
        if self.layout not in LAYOUTS:
            raise ProblemError("layout", self.layout, f"must be one of {', '.join(LAYOUTS)}")
        if self.precision not in PRECISIONS:
            raise ProblemError("precision", self.precision, f"must be one of {', '.join(PRECISIONS)}")
        if PRECISION_DTYPES[self.precision] != self.dtype:
            raise ProblemError("precision", self.precision,
                               f"{self.precision} computes {PRECISION_DTYPES[self.precision]} inputs, not "
                               f"{self.dtype}; give the dtype alone, or a precision of "
                               f"{', '.join(p for p, d in PRECISION_DTYPES.items() if d == self.dtype)}")
        if self.out_dtype is not None:
            if self.out_dtype not in DTYPE_SIZES:
                raise ProblemError("out_dtype", self.out_dtype, f"must be one of {', '.join(DTYPE_SIZES)}")
            if self.out_dtype == self.dtype:  # the default, said out loud: one key per problem
                object.__setattr__(self, "out_dtype", None)
            elif self.out_dtype != "float32":
                raise ProblemError("out_dtype", self.out_dtype,
                                   f"a {self.dtype} problem writes {self.dtype} or float32, not {self.out_dtype}")

        pad_h = self.padding[0] + self.padding[1]
        pad_w = self.padding[2] + self.padding[3]
        if self.extent_h > self.H + pad_h:
            raise ProblemError(
                "R", self.R,
                f"filter height with dilation ({self.extent_h}) exceeds the padded input height "
                f"({self.H} + {pad_h} padding); use a smaller R or dilation, or more padding")
        if self.extent_w > self.W + pad_w:
            raise ProblemError(
                "S", self.S,
                f"filter width with dilation ({self.extent_w}) exceeds the padded input width "
                f"({self.W} + {pad_w} padding); use a smaller S or dilation, or more padding")
        for label, count, fix in (
                ("input N*C*H*W", self.N * self.C * self.H * self.W, "split the batch"),
                ("weights K*C*R*S", self.K * self.C * self.R * self.S,
                 "split the filters (K) into groups"),
                ("output N*K*P*Q", self.N * self.K * self.P * self.Q, "split the batch")):
            if count > INDEX_LIMIT:
                raise ProblemError(
                    "size", count,
                    f"{label} has {count} elements, beyond the 32-bit indexing of autoconv's "
                    f"kernels ({INDEX_LIMIT}); {fix}")
        self._check_index_bounds()

    def _check_index_bounds(self) -> None:
        """Every index expression the kernels compute in 32-bit ``int`` must fit.

        The templates (templates/*.cu.j2) compute, besides the element counts checked
        afterwards: the dilated filter extent ``(R-1)*dilation + 1`` and the tap offset
        ``r*dilation``; the window corner ``p*stride - pad_top`` for every output row p
        (up to ``stride*P``) and the input row ``h`` it reaches, from ``-pad_top`` to
        ``H + pad_bottom - 1`` (so the padded extent ``H + pad_top + pad_bottom``); and the
        element offset ``img*C*H*W + (c*H + h)*W + w`` of such a (possibly padded) position,
        before testing whether it lies inside the image. Byte offsets are formed by
        pointer arithmetic (64-bit) from these element offsets.
        """
        top, bottom, left, right = self.padding
        for axis, size, kernel, dilation, stride, before, after in (
                ("height", self.H, self.R, self.dilation[0], self.stride[0], top, bottom),
                ("width", self.W, self.S, self.dilation[1], self.stride[1], left, right)):
            extent = (kernel - 1) * dilation + 1
            if extent > INDEX_LIMIT:
                raise ProblemError(
                    f"dilation ({axis})", dilation,
                    f"the dilated filter {axis} (filter - 1) * dilation + 1 = {extent} is beyond "
                    f"the 32-bit indexing of autoconv's kernels ({INDEX_LIMIT})")
            if size + before + after > INDEX_LIMIT:
                raise ProblemError(
                    f"padding ({axis})", (before, after),
                    f"the padded input {axis} {size} + {before} + {after} = "
                    f"{size + before + after} is beyond the 32-bit indexing of autoconv's "
                    f"kernels ({INDEX_LIMIT})")
            if extent <= size + before + after:  # (else the extent check below refuses it)
                out = (size + before + after - extent) // stride + 1
                if stride * out > INDEX_LIMIT:
                    raise ProblemError(
                        f"stride ({axis})", stride,
                        f"stride * output {axis} = {stride} * {out} = {stride * out} is beyond "
                        f"the 32-bit indexing of autoconv's kernels ({INDEX_LIMIT}); use a "
                        "stride no larger than the padded input")
        # Offsets of padded positions: from (-1 for rows past the end) - (pad_top*W + pad_left)
        # up to N*C*H*W + pad_bottom*W + pad_right.
        elements = self.N * self.C * self.H * self.W
        low = 1 + top * self.W + left
        high = elements + bottom * self.W + right
        if max(low, high) > INDEX_LIMIT:
            raise ProblemError(
                "padding", self.padding,
                f"element offsets of the padded input reach {-low if low > high else high}, beyond "
                f"the 32-bit indexing of autoconv's kernels ({INDEX_LIMIT}); use less padding")

    # ---- derived sizes -------------------------------------------------------------
    @property
    def extent_h(self) -> int:
        """Height of the dilated filter window: (R - 1) * dilation_h + 1."""
        return (self.R - 1) * self.dilation[0] + 1

    @property
    def extent_w(self) -> int:
        return (self.S - 1) * self.dilation[1] + 1

    @property
    def P(self) -> int:
        """Output height."""
        return (self.H + self.padding[0] + self.padding[1] - self.extent_h) // self.stride[0] + 1

    @property
    def Q(self) -> int:
        """Output width."""
        return (self.W + self.padding[2] + self.padding[3] - self.extent_w) // self.stride[1] + 1

    @property
    def gemm_m(self) -> int:
        """Rows of the implicit GEMM: one per output pixel, N * P * Q."""
        return self.N * self.P * self.Q

    @property
    def gemm_n(self) -> int:
        """Columns of the implicit GEMM: one per filter, K."""
        return self.K

    @property
    def gemm_k(self) -> int:
        """Reduction length of the implicit GEMM: C * R * S."""
        return self.C * self.R * self.S

    # Shapes are logical (NCHW, KCRS, NKPQ) whatever the layout, as PyTorch and cuDNN give them;
    # the layout decides the order in memory (*_storage_shape, *_strides).
    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return (self.N, self.C, self.H, self.W)

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        return (self.K, self.C, self.R, self.S)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return (self.N, self.K, self.P, self.Q)

    @property
    def storage_order(self) -> tuple[int, int, int, int]:
        """The logical axes in memory order, outermost first: (0, 1, 2, 3) for NCHW (KCRS
        weights), (0, 2, 3, 1) for NHWC (KRSC weights)."""
        return (0, 1, 2, 3) if self.layout == "NCHW" else (0, 2, 3, 1)

    @property
    def input_storage_shape(self) -> tuple[int, ...]:
        """The input as a dense array in memory order: N x C x H x W, or N x H x W x C."""
        return tuple(self.input_shape[axis] for axis in self.storage_order)

    @property
    def weight_storage_shape(self) -> tuple[int, ...]:
        return tuple(self.weight_shape[axis] for axis in self.storage_order)

    @property
    def output_storage_shape(self) -> tuple[int, ...]:
        return tuple(self.output_shape[axis] for axis in self.storage_order)

    def strides(self, shape: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        """Element strides of the logical axes of a dense tensor of logical ``shape`` stored
        in this problem's layout (PyTorch's ``Tensor.stride()`` of a channels_last tensor for
        NHWC)."""
        strides = [0] * 4
        step = 1
        for axis in reversed(self.storage_order):
            strides[axis] = step
            step *= shape[axis]
        return (strides[0], strides[1], strides[2], strides[3])

    @property
    def output_dtype(self) -> str:
        """The output's dtype: ``out_dtype``, else the inputs'."""
        return self.out_dtype or self.dtype

    @property
    def flops(self) -> int:
        """Multiply-adds counted as two operations: 2 * N * K * P * Q * C * R * S."""
        return 2 * self.gemm_m * self.gemm_n * self.gemm_k

    @property
    def element_bytes(self) -> int:
        return DTYPE_SIZES[self.dtype]

    @property
    def min_bytes(self) -> int:
        """Bytes every implementation must move: each input read once, the output written once."""
        inputs = (self.N * self.C * self.H * self.W + self.K * self.C * self.R * self.S
                  + (self.K if self.bias else 0))
        return inputs * self.element_bytes + self.N * self.K * self.P * self.Q * DTYPE_SIZES[self.output_dtype]

    @property
    def gflop(self) -> float:
        return self.flops / 1e9

    # ---- identity ------------------------------------------------------------------
    def spec(self) -> str:
        """The compact spec string that parses back to this problem (see :func:`parse_spec`)."""
        parts = [f"{name}={getattr(self, name)}" for name in SIZE_FIELDS]
        parts.append(f"stride={_pair_str(self.stride)}")
        parts.append(f"pad={_padding_str(self.padding)}")
        parts.append(f"dilation={_pair_str(self.dilation)}")
        if self.bias:
            parts.append("bias=1")
        if self.layout != "NCHW":
            parts.append(f"layout={self.layout}")
        if self.precision != "fp32":  # (a 16-bit precision names the dtype too)
            parts.append(f"precision={self.precision}")
        if self.out_dtype is not None:
            parts.append(f"out_dtype={self.out_dtype}")
        return ",".join(parts)

    def key(self) -> str:
        """A canonical string naming the problem in caches and study names."""
        return self.spec()

    def shape_str(self) -> str:
        """Human-readable shape, e.g. ``32x64x56x56 * 64x3x3 s1 p1:1:1:1 d1``."""
        return (f"{self.N}x{self.C}x{self.H}x{self.W} * {self.K}x{self.R}x{self.S}"
                f" s{_pair_str(self.stride)} p{_padding_str(self.padding)} d{_pair_str(self.dilation)}"
                + (" +bias" if self.bias else "") + ("" if self.precision == "fp32" else f" {self.precision}")
                + ("" if self.layout == "NCHW" else f" {self.layout}")
                + ("" if self.out_dtype is None else f" ->{self.out_dtype}"))

    def with_(self, **changes) -> ConvProblem:
        return dataclasses.replace(self, **changes)

    def in_precision(self, precision: str) -> ConvProblem:
        """This problem in ``precision`` (:data:`PRECISIONS`), with that precision's dtype; a
        float32 output stays where the new dtype allows one, else the output follows the dtype.

        Raises:
            ProblemError: ``precision`` is not one of :data:`PRECISIONS`.
        """
        if precision not in PRECISIONS:
            raise ProblemError("precision", precision, f"must be one of {', '.join(PRECISIONS)}")
        dtype = PRECISION_DTYPES[precision]
        return self.with_(precision=precision, dtype=dtype,
                          out_dtype=self.out_dtype if dtype != "float32" else None)


def _check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProblemError(name, value, "must be a positive integer")
    if value < 1:
        raise ProblemError(name, value, "must be >= 1")


def _pair_str(pair: tuple[int, int]) -> str:
    return str(pair[0]) if pair[0] == pair[1] else f"{pair[0]}x{pair[1]}"


def _padding_str(padding: tuple[int, int, int, int]) -> str:
    if len(set(padding)) == 1:
        return str(padding[0])
    return ":".join(str(v) for v in padding)


# ---- building problems from loose user values -------------------------------------------

def make_problem(*, N, C, H, W, K, R, S, stride=1, dilation=1, padding=0, bias=False,
                 dtype=None, layout="NCHW", precision=None, out_dtype=None) -> ConvProblem:
    """Build a problem from user-level values.

    ``stride`` and ``dilation`` are an int or a (height, width) pair. ``padding`` is an
    int, a (height, width) pair (symmetric), a (top, bottom, left, right) 4-tuple, or
    ``"same"`` / ``"valid"``. ``precision`` and ``dtype`` each imply the other when one is
    left out (``bf16`` and ``bfloat16``, ``fp16`` and ``float16``, ``fp32`` and ``float32``).

    Raises:
        ProblemError: naming the field and value that is wrong.
    """
    stride = as_pair("stride", stride)
    dilation = as_pair("dilation", dilation)
    if isinstance(padding, str):
        mode = padding.lower()
        if mode == "valid":
            padding = (0, 0, 0, 0)
        elif mode == "same":
            for name, value in (("H", H), ("W", W), ("R", R), ("S", S)):
                _check_positive_int(name, value)
            # The SAME rule divides by the stride and scales by the dilation: check them
            # first, or stride 0 would surface as a ZeroDivisionError.
            for name, pair in (("stride", stride), ("dilation", dilation)):
                for axis, value in zip(("height", "width"), pair):
                    _check_positive_int(f"{name} ({axis})", value)
            padding = (same_padding(H, R, stride[0], dilation[0])
                       + same_padding(W, S, stride[1], dilation[1]))
        else:
            raise ProblemError("padding", padding, "expected an integer, 'same' or 'valid'")
    else:
        padding = as_padding(padding)
    if isinstance(layout, str):
        layout = layout.upper()
    if precision is None:
        precision = DTYPE_PRECISIONS.get(dtype, "fp32") if isinstance(dtype, str) else "fp32"
    if dtype is None:
        dtype = PRECISION_DTYPES.get(precision, "float32") if isinstance(precision, str) else "float32"
    return ConvProblem(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride, dilation=dilation,
                       padding=padding, bias=bias, dtype=dtype, layout=layout, precision=precision,
                       out_dtype=out_dtype)


def as_pair(name: str, value) -> tuple[int, int]:
    """An int or a 2-sequence of ints as a (height, width) pair."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return (value[0], value[1])
    raise ProblemError(name, value, "expected an integer or a (height, width) pair")


def as_padding(value) -> tuple[int, int, int, int]:
    """An int, a (height, width) pair or a (top, bottom, left, right) 4-sequence."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * 4
    if isinstance(value, (tuple, list)):
        if len(value) == 2:
            return (value[0], value[0], value[1], value[1])
        if len(value) == 4:
            return tuple(value)
    raise ProblemError("padding", value,
                       "expected an integer, a (height, width) pair, (top, bottom, left, right), "
                       "'same' or 'valid'")


# ---- the compact spec string ------------------------------------------------------------

SPEC_KEYS = SIZE_FIELDS + ("stride", "pad", "dilation", "bias", "dtype", "layout", "precision", "out_dtype")
SPEC_EXAMPLE = "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,dilation=1"


def parse_spec(spec: str) -> ConvProblem:
    """Parse ``N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,dilation=1``.

    Pairs are ``AxB`` (height x width) or one number for both; ``pad`` is also ``same``,
    ``valid``, ``AxB`` or four numbers ``T:B:L:R``; ``bias`` is 0/1/true/false; ``precision``
    is ``fp32`` (the default), ``tf32``, ``bf16`` or ``fp16`` (see :data:`PRECISIONS`; a
    16-bit precision implies its dtype); ``layout`` NCHW or NHWC; ``out_dtype`` float32 for a
    16-bit problem that writes float32. Sizes
    N, C, H, W, K, R, S are required; stride and dilation default to 1, pad to 0.

    Raises:
        ProblemError: for unknown or repeated keys, malformed values, or an invalid problem.
    """
    if not isinstance(spec, str):
        raise ProblemError("spec", spec, f"expected a string like {SPEC_EXAMPLE}")
    if len(spec) > SPEC_MAX_LENGTH:
        raise ProblemError("spec", spec, f"{len(spec)} characters; a spec has at most "
                           f"{SPEC_MAX_LENGTH}, e.g. {SPEC_EXAMPLE}")
    values: dict[str, str] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        if "=" not in item:
            raise ProblemError("spec", item, f"expected KEY=VALUE items, e.g. {SPEC_EXAMPLE}")
        key, _, value = (part.strip() for part in item.partition("="))
        if key not in SPEC_KEYS:
            raise ProblemError("spec", key, "unknown key" + did_you_mean(key, SPEC_KEYS)
                               + f"; known keys: {', '.join(SPEC_KEYS)}")
        if key in values:
            raise ProblemError(key, value, "given twice")
        values[key] = value
    missing = [k for k in SIZE_FIELDS if k not in values]
    if missing:
        raise ProblemError("spec", spec, f"missing {', '.join(missing)}; e.g. {SPEC_EXAMPLE}")
    sizes = {k: _parse_int(k, values[k]) for k in SIZE_FIELDS}
    stride = _parse_pair("stride", values.get("stride", "1"))
    dilation = _parse_pair("dilation", values.get("dilation", "1"))
    pad_text = values.get("pad", "0").lower()
    padding: str | tuple[int, ...]
    if pad_text in ("same", "valid"):
        padding = pad_text
    elif ":" in pad_text:
        parts = pad_text.split(":")
        if len(parts) != 4:
            raise ProblemError("pad", pad_text, "expected four numbers T:B:L:R")
        padding = tuple(_parse_int("pad", p) for p in parts)
    else:
        padding = _parse_pair("pad", pad_text)
    bias = _parse_bool("bias", values.get("bias", "0"))
    return make_problem(**sizes, stride=stride, dilation=dilation, padding=padding, bias=bias,
                        dtype=values.get("dtype"), layout=values.get("layout", "NCHW"),
                        precision=values.get("precision"), out_dtype=values.get("out_dtype"))


#: An integer in a spec: ASCII digits only (int() would also take '1_0', ' 1' and other
#: scripts' digits), at most 19 of them.
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,19}")
#: Longest spec string accepted (a real one is under 100 characters).
SPEC_MAX_LENGTH = 1000


def _parse_int(name: str, text: str) -> int:
    if not _INT_TEXT.fullmatch(text):
        raise ProblemError(name, text, "expected an integer (ASCII digits 0-9)")
    return int(text)


def _parse_pair(name: str, text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) == 1:
        value = _parse_int(name, parts[0])
        return (value, value)
    if len(parts) == 2:
        return (_parse_int(name, parts[0]), _parse_int(name, parts[1]))
    raise ProblemError(name, text, "expected a number or HxW, e.g. 2x1")


def _parse_bool(name: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ProblemError(name, text, "expected 0/1 or true/false")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = [lowered[word.lower()]] if word.lower() in lowered else []
    return f" (did you mean '{close[0]}'?)" if close else ""


def tensor_elements(problem: ConvProblem) -> dict[str, int]:
    """Element counts of the problem's tensors, by argument name."""
    counts = {"x": math.prod(problem.input_shape), "w": math.prod(problem.weight_shape),
              "y": math.prod(problem.output_shape)}
    if problem.bias:
        counts["bias"] = problem.K
    return counts
