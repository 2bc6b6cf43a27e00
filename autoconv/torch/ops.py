"""The PyTorch operator ``torch.ops.autoconv.conv2d``: its schema, CUDA kernel, fake
(meta) implementation and autograd formula.

    torch.ops.autoconv.conv2d(x, w, bias, stride=[sh, sw], padding=[top, bottom, left, right],
                              dilation=[dh, dw], precision="fp32") -> y

``precision`` is ``"fp32"`` (float32 accuracy; the default of the operator itself) or
``"tf32"`` (inputs rounded to TF32, float32 accumulation), a string resolved by the caller:
:func:`autoconv.torch.conv2d` reads PyTorch's setting for cuDNN convolutions when given None.
It applies to float32 tensors. bfloat16 and float16 tensors are computed in their own precision
(``"bf16"``, ``"fp16"``: float32 sums, one rounding to the tensors' type), whatever the float32
setting says, as PyTorch's own convolutions do; ``precision`` may name it, not another. 16-bit
convolutions run NHWC kernels: channels_last tensors (``x.to(memory_format=torch.channels_last)``,
``model.to(memory_format=torch.channels_last)`` for the weights) are read as they are, others are
copied to channels_last first, and the output is channels_last. So do tf32 convolutions of a
channels_last float32 ``x`` on a Hopper GPU, where a family computes tf32 in NHWC
(:func:`autoconv.torch.layouts.kernel_layout`); other float32 inputs are read NCHW (copied to it if need be).

Registered with :mod:`torch.library`, so ``torch.compile(fullgraph=True)`` traces it as
one node (the fake implementation gives the output's shape; Inductor hands it channels_last
tensors where it computes NHWC: :mod:`autoconv.torch.inductor`), CUDA graphs capture its
launches, and autograd differentiates it:

- **Forward** (CUDA): the tuned kernel for the problem (see :mod:`autoconv.runtime.selection`),
  chosen, compiled and loaded on the first call of each (device, problem); later calls
  look up a :class:`_Call` by the arguments' shapes and launch through the driver on
  PyTorch's current stream. Output and scratch come from PyTorch's caching allocator.
- **Weights transforms** (the 3xTF32 split, wgmma's swizzle, the rsc reorder) are kept
  per (weight tensor, stream) while the tensor lives and its version counter (bumped
  by every in-place change: optimizer steps, ``copy_``, ``load_state_dict``) is
  unchanged. Under CUDA graph capture they are captured with the call, so a replay after
  the weights changed in place is still right. Changes made through ``.data`` bypass the
  version counter (as for any PyTorch cache keyed on it): call
  :func:`autoconv.torch.clear_weight_cache` after such changes.
- **Autocast** (CUDA): floating-point tensors but float64 are cast to the autocast dtype before
  the operator runs, by its autocast kernel, in eager calls and in traced graphs alike, as
  PyTorch's convolution's are (:func:`autocast_casts`).
- **Backward**: PyTorch's own convolution backward (``aten.convolution_backward``, so
  it follows ``torch.backends.cudnn`` settings such as ``conv.fp32_precision``, whatever
  the forward's ``precision``), until autoconv tunes backward kernels. Asymmetric padding
  is applied to ``x`` explicitly first.

Nothing in a call allocates with cudaMalloc (PyTorch's allocator serves), compiles,
reads the cache or synchronises, once the problem's kernel is loaded; a first call
during CUDA graph capture raises :class:`CaptureError` instead (run the model once
before capturing, as PyTorch's CUDA graph docs advise for warm-up).
"""

from __future__ import annotations

import threading
import weakref
from typing import cast

import torch
import torch.nn.functional as F

from autoconv.errors import AutoconvError, ProblemError
from autoconv.problems.problem import PRECISION_DTYPES, ConvProblem
from autoconv.runtime.api import on_clear_loaded
from autoconv.runtime.arguments import check_geometry, check_precision, check_shapes, output_size
from autoconv.runtime.selection import REGISTRY, Runner
from autoconv.torch.inductor import register_layout_if_inductor_is_loaded
from autoconv.torch.layouts import SIXTEEN_BIT_PRECISIONS, kernel_layout
from autoconv.torch.settings import pytorch_precision

_Pair = tuple[int, int]
_Padding = tuple[int, int, int, int]

#: The operator's schema: padding is (top, bottom, left, right), already resolved; precision
#: is "fp32" or "tf32" (see :data:`autoconv.problems.problem.PRECISIONS`), already resolved.
SCHEMA = ("conv2d(Tensor x, Tensor w, Tensor? bias, SymInt[2] stride, SymInt[4] padding, SymInt[2] dilation, "
          "str precision='fp32') -> Tensor")

_library = torch.library.Library("autoconv", "DEF")
_library.define(SCHEMA)


class CaptureError(AutoconvError):
    """A call that needs work that CUDA graph capture forbids (loading a kernel)."""


def _raw_stream(device: int) -> int:
    """PyTorch's current ``cudaStream_t`` on ``device``, as an int (what Inductor's
    generated code reads; 0.1 us against 5 us for ``current_stream().cuda_stream``)."""
    return torch._C._cuda_getCurrentRawStream(device)


if not hasattr(torch._C, "_cuda_getCurrentRawStream"):  # pragma: no cover - older PyTorch
    def _raw_stream(device: int) -> int:  # noqa: F811
        return torch.cuda.current_stream(device).cuda_stream


# ---- the forward on CUDA ---------------------------------------------------------------------

class _WeightsEntry:
    """The workspace holding one weight tensor's transformed copy, for one stream."""
    __slots__ = ("tensor", "version", "pointer", "workspace")

    def __init__(self, tensor: weakref.ref, version: int, pointer: int, workspace: torch.Tensor | None):
        self.tensor, self.version, self.pointer, self.workspace = tensor, version, pointer, workspace


class _Call:
    """One (device, problem)'s call: its runner and output shape, and the transformed
    weights kept per (weight tensor, stream)."""

    def __init__(self, problem: ConvProblem, runner: Runner, device: torch.device):
        self.problem = problem
        self.runner = runner
        self.device = device
        self.output_shape = problem.output_shape
        self.workspace_bytes = runner.workspace_bytes
        self.keeps_weights = runner.launcher is not None and runner.launcher.transforms_weights
        #: NHWC problems (16-bit, or tf32 on channels_last inputs) run NHWC kernels: channels_last
        #: x, w and y, in the tensors' dtype.
        self.channels_last = problem.layout == "NHWC"
        #: A tf32 call on channels_last inputs whose NHWC problem no family could run: it runs
        #: NCHW, and its output is copied to channels_last, as kernel_layout promised.
        self.restrides_output = False
        self.output_dtype = _DTYPES.get(problem.precision, torch.float32)
        top, bottom, left, right = problem.padding
        #: Where cuDNN's plan runs: F.conv2d's arguments for PyTorch's own convolution of the
        #: problem, which eager calls run instead (None where PyTorch cannot pad it: asymmetric)
        self.pytorch_arguments = ((problem.stride, (top, left), problem.dilation)
                                  if runner.cudnn is not None and top == bottom and left == right else None)
        self._weights: dict[tuple[int, int], _WeightsEntry] = {}
        self._lock = threading.Lock()

    def __call__(self, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None,
                 out: torch.Tensor | None = None) -> torch.Tensor:
        if self.pytorch_arguments is not None and out is None and self._pytorch_computes_it(x):
            return F.conv2d(x, w, bias, *self.pytorch_arguments)
        device = self.device
        if out is not None:
            y = out
        elif self.channels_last:
            y = torch.empty(self.output_shape, dtype=self.output_dtype, device=device, memory_format=_CHANNELS_LAST)
        else:
            y = torch.empty(self.output_shape, dtype=torch.float32, device=device)
        stream = _raw_stream(device.index)
        bias_pointer = 0 if bias is None else bias.data_ptr()
        runner = self.runner
        if runner.cudnn is not None:
            scratch = self._scratch(device)
            runner.cudnn(x.data_ptr(), w.data_ptr(), y.data_ptr(), bias_pointer or None, stream=stream,
                         workspace=0 if scratch is None else scratch.data_ptr())
            return y
        prepare = True
        if self.keeps_weights and not torch.cuda.is_current_stream_capturing():
            workspace, prepare = self._weights_workspace(w, stream, device)
        else:
            workspace = self._scratch(device)
        assert runner.launcher is not None  # (only cuDNN's runners have none: returned above)
        runner.launcher((x.data_ptr(), w.data_ptr(), bias_pointer, y.data_ptr(),
                         0 if workspace is None else workspace.data_ptr()), stream, prepare_weights=prepare)
        return y

    def _pytorch_computes_it(self, x: torch.Tensor) -> bool:
        """Whether this call, where cuDNN's plan was measured fastest, runs PyTorch's own
        convolution instead: eager calls (not captured in a CUDA graph) whose precision is the
        one PyTorch's convolution computes now (16-bit tensors always). cuDNN's plan through the
        frontend's Python ``execute`` costs ~50 us of host time a call, PyTorch's convolution a
        fraction of that, and an eager network's time is mostly host time (the bf16 ResNet-50
        forward at batch 32: 7.6 ms eager, 2.5 ms as a graph); a captured call costs no host
        time on replay, so there the measured plan runs."""
        return ((x.dtype is not _FLOAT32 or self.problem.precision == pytorch_precision())
                and not torch.cuda.is_current_stream_capturing())

    def _scratch(self, device: torch.device) -> torch.Tensor | None:
        if not self.workspace_bytes:
            return None
        return torch.empty(self.workspace_bytes, dtype=torch.uint8, device=device)

    def _weights_workspace(self, w: torch.Tensor, stream: int, device: torch.device):
        """(workspace, whether the weights must be transformed into it) for ``w`` on ``stream``."""
        key = (id(w), stream)
        entry = self._weights.get(key)
        if (entry is not None and entry.tensor() is w and entry.version == w._version
                and entry.pointer == w.data_ptr()):
            return entry.workspace, False
        workspace = self._scratch(device)
        with self._lock:
            self._weights[key] = _WeightsEntry(weakref.ref(w, self._forget(key)), w._version, w.data_ptr(),
                                               workspace)
        return workspace, True

    def _forget(self, key):
        calls = weakref.ref(self)

        def forget(_):
            owner = calls()
            if owner is not None:
                with owner._lock:
                    owner._weights.pop(key, None)
        return forget

    def clear_weights(self) -> None:
        with self._lock:
            self._weights.clear()


#: (shapes, has bias, stride, padding, dilation, device, precision, kernel layout) -> _Call
_calls: dict[tuple, _Call] = {}
_FLOAT32 = torch.float32


def conv2d_cuda(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, stride: tuple, padding: tuple,
                dilation: tuple, precision: str, out: torch.Tensor | None = None) -> torch.Tensor:
    """The forward on CUDA tensors, ``stride``/``padding``/``dilation`` as tuples (see
    :func:`autoconv.torch.functional.resolve`) and ``precision`` resolved ("fp32" or "tf32").
    The operator's CUDA kernel, and what eager calls of :func:`autoconv.torch.conv2d` run
    directly."""
    if x.dtype is not _FLOAT32 or w.dtype is not _FLOAT32 or (bias is not None and bias.dtype is not _FLOAT32):
        precision = _sixteen_bit_precision(x, w, bias, precision)
    device = x.get_device()
    layout = kernel_layout(x, precision)
    key = (x.shape, w.shape, bias is None, stride, padding, dilation, device, precision, layout)
    call = _calls.get(key)
    if call is None:
        call = _first_call(key, x, w, bias, stride, padding, dilation, precision, layout)
    if w.get_device() != device or (bias is not None and bias.get_device() != device):
        _refuse_devices(x, w, bias)
    if call.channels_last:  # NHWC kernels: x as N,H,W,C and w as K,R,S,C in memory
        if not x.is_contiguous(memory_format=_CHANNELS_LAST):
            x = x.contiguous(memory_format=_CHANNELS_LAST)
        if not w.is_contiguous(memory_format=_CHANNELS_LAST):
            w = w.contiguous(memory_format=_CHANNELS_LAST)
    else:
        if not x.is_contiguous():
            x = x.contiguous()
        if not w.is_contiguous():
            w = w.contiguous()
    if bias is not None and not bias.is_contiguous():
        bias = bias.contiguous()
    if call.restrides_output:
        y = _run(call, device, x, w, bias, None).contiguous(memory_format=_CHANNELS_LAST)
        return y if out is None else out.copy_(y)
    return _run(call, device, x, w, bias, out)


def _run(call: _Call, device: int, x, w, bias, out) -> torch.Tensor:
    if device != _current_device():
        with torch.cuda.device(device):
            return call(x, w, bias, out)
    return call(x, w, bias, out)


def _conv2d_kernel(x, w, bias, stride, padding, dilation, precision="fp32"):
    """The operator's CUDA kernel: the dispatcher passes the int lists as lists."""
    return conv2d_cuda(x, w, bias, tuple(stride), tuple(padding), tuple(dilation), precision)


_current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)


def _first_call(key, x, w, bias, stride, padding, dilation, precision, layout: str) -> _Call:
    """Check the arguments, build the problem and load its kernel (once per key)."""
    check_precision(precision, none_allowed=False)
    if precision in _DTYPES and x.dtype is _FLOAT32:
        raise ProblemError("precision", precision, f"the tensors are float32; {precision!r} computes "
                           f"{str(_DTYPES[precision]).replace('torch.', '')} tensors: convert them (x.to(...)) "
                           "or run under torch.autocast, or pass 'fp32', 'tf32' or None")
    check_shapes(tuple(x.shape), tuple(w.shape), None if bias is None else tuple(bias.shape))
    if not x.is_cuda:
        raise ProblemError("x.device", str(x.device), "the autoconv CUDA kernel got a tensor that is not on a "
                           "CUDA device; move it with x.cuda()")
    _refuse_devices(x, w, bias)
    N, C, H, W = (int(v) for v in x.shape)
    K, _, R, S = (int(v) for v in w.shape)
    # (as given: ConvProblem checks the lengths)
    problem = ConvProblem(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=cast(_Pair, tuple(int(v) for v in stride)),
                          dilation=cast(_Pair, tuple(int(v) for v in dilation)),
                          padding=cast(_Padding, tuple(int(v) for v in padding)), bias=bias is not None,
                          precision=precision, dtype=PRECISION_DTYPES[precision], layout=layout)
    device = x.get_device()
    if not REGISTRY.is_loaded(problem, device) and torch.cuda.is_current_stream_capturing():
        raise CaptureError(f"autoconv: the first call for {problem.shape_str()} on cuda:{device} happened "
                           "during CUDA graph capture, where its kernel cannot be loaded (that compiles and "
                           "reads the winners' cache). Run the model once before capturing (a warm-up "
                           "iteration on a side stream, as torch.cuda.graphs' documentation shows).")
    restrides = False
    with torch.cuda.device(device):
        try:
            runner = REGISTRY.runner(problem, device)
        except AutoconvError:
            if layout != "NHWC" or precision != "tf32":
                raise
            # No family runs this tf32 problem in NHWC (padding past the im2col box, say): NCHW
            # kernels on copies, the output copied back to channels_last.
            problem, restrides = problem.with_(layout="NCHW"), True
            runner = REGISTRY.runner(problem, device)
    call = _calls[key] = _Call(problem, runner, x.device)
    call.restrides_output = restrides
    return call


#: The precision of each 16-bit dtype's convolutions, and back.
_PRECISIONS = SIXTEEN_BIT_PRECISIONS
_DTYPES = {precision: dtype for dtype, precision in _PRECISIONS.items()}
_CHANNELS_LAST = torch.channels_last


def _sixteen_bit_precision(x, w, bias, precision: str) -> str:
    """The precision of a call whose tensors are not all float32: the one of their 16-bit dtype
    (bf16, fp16), or ProblemError for mixed or other dtypes, or a 16-bit ``precision`` that names
    another dtype than the tensors'."""
    tensors = (("x", x), ("w", w), ("bias", bias))
    for name, tensor in tensors:
        if tensor is not None and tensor.dtype not in _PRECISIONS and tensor.dtype is not _FLOAT32:
            raise ProblemError(f"{name}.dtype", str(tensor.dtype).replace("torch.", ""),
                               "autoconv computes float32, bfloat16 and float16 convolutions; convert with "
                               f"{name}.float(), or leave this layer to PyTorch")
    for name, tensor in tensors[1:]:
        if tensor is not None and tensor.dtype is not x.dtype:
            raise ProblemError(f"{name}.dtype", str(tensor.dtype).replace("torch.", ""),
                               f"x is {str(x.dtype).replace('torch.', '')}: x, w and bias must have one dtype "
                               f"(torch.autocast casts them alike); convert with {name}.to(x.dtype)")
    own = _PRECISIONS[x.dtype]
    if precision in _DTYPES and precision != own:
        raise ProblemError("precision", precision, f"the tensors are {str(x.dtype).replace('torch.', '')}, "
                           f"computed in precision {own!r}; pass {own!r} or None")
    return own


def _refuse_devices(x, w, bias) -> None:
    for name, tensor in (("w", w), ("bias", bias)):
        if tensor is not None and tensor.device != x.device:
            raise ProblemError(f"{name}.device", str(tensor.device),
                               f"x is on {x.device} but {name} is on {tensor.device}; move {name} there "
                               f"with {name}.to(x.device)")


class _CastParameters:
    """16-bit copies of float32 weights and biases for calls under autocast, kept while the
    tensor lives and is unchanged (same version counter and storage), so that inference does not
    cast every layer's weights at every call (PyTorch's autocast keeps its casts for an autocast
    region likewise). A cast that autograd must see (grad enabled, a tensor that requires grad)
    is made afresh each call, as are casts during CUDA graph capture (their memory is the graph's)
    and where autocast's own cache is off (``torch.autocast(cache_enabled=False)``, which
    ``torch.cuda.make_graphed_callables`` asks for). Tensors autocast would not cast
    (:func:`autocast_casts`) come back as they are."""

    def __init__(self) -> None:
        self._casts: dict[tuple[int, torch.dtype], tuple] = {}

    def get(self, tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        if not autocast_casts(tensor, dtype):
            return tensor
        if ((tensor.requires_grad and torch.is_grad_enabled()) or not torch.is_autocast_cache_enabled()
                or (tensor.is_cuda and torch.cuda.is_current_stream_capturing())):
            return tensor.to(dtype)
        key = (id(tensor), dtype)
        kept = self._casts.get(key)
        if kept is not None and kept[0]() is tensor and kept[1] == tensor._version and kept[2] == tensor.data_ptr():
            return kept[3]
        cast = tensor.to(dtype)
        casts = self._casts
        self._casts[key] = (weakref.ref(tensor, lambda _: casts.pop(key, None)), tensor._version, tensor.data_ptr(),
                            cast)
        return cast

    def clear(self) -> None:
        self._casts.clear()


def autocast_casts(tensor: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether autocast casts ``tensor`` to ``dtype`` for a convolution, as PyTorch's autocast does
    its own: a floating-point tensor other than float64, not already of ``dtype``."""
    return tensor.is_floating_point() and tensor.dtype is not torch.float64 and tensor.dtype is not dtype


#: The kept casts of :func:`autoconv.torch.conv2d` under autocast.
CAST_PARAMETERS = _CastParameters()


def clear_weight_cache() -> None:
    """Drop every kept weights transform and 16-bit cast: the next call of each layer
    transforms (or casts) again."""
    for call in list(_calls.values()):
        call.clear_weights()
    CAST_PARAMETERS.clear()


def forget_calls() -> None:
    """Forget every (shape, device) seen (with :func:`autoconv.runtime.clear_loaded`)."""
    _calls.clear()


on_clear_loaded(forget_calls)


# ---- fake (meta) implementation: shapes for torch.compile and FakeTensor ----------------------

def conv2d_fake(x, w, bias, stride, padding, dilation, precision="fp32"):
    """The output's shape, dtype and memory format, on x's device (no data): what tracing sees.
    The arguments are checked as the CUDA kernel checks them (shapes, channels, strides, padding),
    so that meta tensors and tracing refuse what a GPU call would. Tracing for Inductor passes
    here after loading Inductor's lowering: the operator's layout constraint is registered then
    (:mod:`autoconv.torch.inductor`).

    Raises:
        ProblemError: naming the argument that is wrong.
    """
    check_precision(precision, none_allowed=False)
    check_shapes(tuple(x.shape), tuple(w.shape), None if bias is None else tuple(bias.shape))
    check_geometry(stride, padding, dilation)
    register_layout_if_inductor_is_loaded()
    N, K = x.shape[0], w.shape[0]
    P, Q = output_size(tuple(x.shape), tuple(w.shape), stride, padding, dilation)
    if kernel_layout(x, precision) == "NHWC":  # NHWC kernels write channels_last outputs
        return torch.empty((N, K, P, Q), dtype=x.dtype, device=x.device, memory_format=_CHANNELS_LAST)
    return x.new_empty((N, K, P, Q))


# ---- autograd: PyTorch's convolution backward -------------------------------------------------

def _setup_context(ctx, inputs, output) -> None:
    x, w, bias, stride, padding, dilation = inputs[:6]  # (the precision does not change the backward)
    ctx.save_for_backward(x, w)
    ctx.arguments = _backward_arguments(w.shape[0], bias is not None, stride, padding, dilation)


def _backward_arguments(channels_out, has_bias: bool, stride, padding, dilation) -> tuple:
    """``aten.convolution_backward``'s arguments for one layer's geometry but the tensors and the
    output mask: (bias sizes or None, stride, its symmetric padding, dilation, the padding to apply
    to x first or None). Sizes may be symbolic (traced calls)."""
    top, bottom, left, right = padding
    symmetric = top == bottom and left == right
    return ([channels_out] if has_bias else None, list(stride), [top, left] if symmetric else [0, 0],
            list(dilation), None if symmetric else (left, right, top, bottom))


_CONVOLUTION_BACKWARD = torch.ops.aten.convolution_backward.default
_NO_OUTPUT_PADDING = (0, 0)


def _backward(ctx, grad_y):
    x, w = ctx.saved_tensors
    bias_sizes, stride, padding, dilation, pad = ctx.arguments
    needs = ctx.needs_input_grad
    grad_x, grad_w, grad_bias = _CONVOLUTION_BACKWARD(
        grad_y, x if pad is None else F.pad(x, pad), w, bias_sizes, stride, padding, dilation, False,
        _NO_OUTPUT_PADDING, 1, [needs[0], needs[1], needs[2] and bias_sizes is not None])
    if grad_x is not None and pad is not None:  # (the gradient of the padded x, cut back to x)
        left, _, top, _ = pad
        grad_x = grad_x[:, :, top:top + x.shape[2], left:left + x.shape[3]]
    return grad_x, grad_w, grad_bias, None, None, None, None


def conv2d_cpu(x, w, bias, stride, padding, dilation, precision="fp32"):
    raise ProblemError("x.device", str(x.device), "autoconv's kernels run on CUDA devices; move the tensors "
                       "with .cuda(), or use torch.nn.functional.conv2d on the CPU")


class EagerConv2d(torch.autograd.Function):
    """The operator's autograd formula as an :class:`torch.autograd.Function`, for eager
    calls that need gradients: ``Function.apply`` costs less than the generic Python
    wrapper that ``register_autograd`` puts in front of the operator (``examples/host_cost.py``
    times a converted layer's calls with grad enabled). The forward takes ``ctx`` itself (the
    older form), which skips the functorch checks that a separate ``setup_context`` costs."""

    @staticmethod
    def forward(ctx, x, w, bias, stride, padding, dilation, precision):
        y = conv2d_cuda(x, w, bias, stride, padding, dilation, precision)
        _setup_context(ctx, (x, w, bias, stride, padding, dilation), y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        return _backward(ctx, grad_y)


def _conv2d_autocast(x, w, bias, stride, padding, dilation, precision="fp32"):
    """The operator under ``torch.autocast`` (CUDA): its tensors cast to the autocast dtype where
    autocast casts PyTorch's own convolution's (:func:`autocast_casts`), then the operator below
    autocast. Traced calls
    go through it too (Dynamo's graphs run autocast regions as such), so that a compiled model
    under autocast asks for the 16-bit problems ``tune --model`` tunes, not float32 ones. (Eager
    calls of :func:`autoconv.torch.conv2d` cast before they reach the operator.)"""
    dtype = torch.get_autocast_dtype("cuda")
    x, w, bias = (t.to(dtype) if t is not None and autocast_casts(t, dtype) else t for t in (x, w, bias))
    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCUDA)):
        return torch.ops.autoconv.conv2d(x, w, bias, stride, padding, dilation, precision)


_library.impl("conv2d", _conv2d_kernel, "CUDA")
_library.impl("conv2d", conv2d_cpu, "CPU")
_library.impl("conv2d", _conv2d_autocast, "AutocastCUDA")
torch.library.register_fake("autoconv::conv2d", conv2d_fake, lib=_library)
torch.library.register_autograd("autoconv::conv2d", _backward, setup_context=_setup_context, lib=_library)
