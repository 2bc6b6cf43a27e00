"""``autoconv.conv2d``: run the tuned kernel for a convolution, in your own process.

    y = autoconv.conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, out=None, precision=None)

Arguments follow :func:`torch.nn.functional.conv2d` (NCHW input ``x``, KCRS weights
``w``, optional ``(K,)`` bias; ``stride``/``dilation`` an int or a pair; ``padding`` an
int, a pair, ``'same'`` or ``'valid'``, and also a ``(top, bottom, left, right)``
4-tuple for asymmetric padding; ``groups`` is not supported). Arrays may be CuPy arrays,
PyTorch CUDA tensors or anything exposing DLPack or ``__cuda_array_interface__``; they
are used in place (zero-copy). ``autoconv.conv2d`` (defined in :mod:`autoconv`, above both)
sends PyTorch tensors to the PyTorch operator (:func:`autoconv.torch.conv2d`: autograd, CUDA
graphs, ``torch.compile``, PyTorch's current stream and allocator) and every other array to
:func:`conv2d` here, whose output is a CuPy array on CuPy's current stream. (The runtime does
not import :mod:`autoconv.torch`, which is built on it.)

``precision`` is ``"fp32"`` (float32 accuracy) or ``"tf32"`` (inputs rounded to TF32, one
tensor-core product per multiply, float32 accumulation: what cuDNN does where PyTorch allows
TF32). None follows PyTorch's own setting for cuDNN convolutions for PyTorch tensors
(``torch.backends.cudnn.conv.fp32_precision == "tf32"``, ``torch.backends.cudnn.allow_tf32``
in older versions; read at each call) and means ``"fp32"`` for other arrays. The precision
is part of the problem, so tf32 and fp32 winners are tuned and cached apart.

The kernel is the cached winner for this problem on this GPU (see
:mod:`autoconv.cache.winners`; the cache, a file or a SQLAlchemy URL, is :func:`set_cache`'s,
else ``$AUTOCONV_CACHE``, else the default path), compiled once per process. Where
``autoconv bench`` measured cuDNN's best plan in the problem's precision (strict FP32, or
TF32 for tf32) faster than the winner, that cuDNN plan runs instead (through the cuDNN
frontend, when it is installed; :func:`use_cudnn` turns this off), so calling autoconv is
never slower than calling cuDNN.
A tf32 problem without a tf32 winner runs the fp32 winner of its shape where there is one
(more accurate than asked). Without a usable entry, the winning configuration of the nearest
tuned problem (same GPU and precision) runs, checked once against a float64 reference before
its first use; else a sound default (``implicit_gemm``'s default config; for tf32
``implicit_gemm_wgmma``'s on compute capability 9.0); :class:`UntunedWarning` says which, once
per problem. :func:`loaded_kernels` tells what runs
for each problem seen so far. ``'same'`` follows TensorFlow's rule (odd padding at the
bottom/right), which for stride 1 matches PyTorch's (:func:`autoconv.runtime.arguments.resolve_geometry`,
the same for PyTorch tensors).

Bad arguments raise :class:`~autoconv.errors.ProblemError` (float32 only; shapes that
disagree; non-contiguous, host, or other-device arrays) before anything is launched.
The kernel choice lives in :mod:`autoconv.runtime.selection`, the launches in
:mod:`autoconv.runtime.launcher`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from autoconv.errors import ProblemError
from autoconv.problems.problem import ConvProblem, make_problem
from autoconv.runtime.arguments import check_precision, check_shapes, resolve_geometry
from autoconv.runtime.selection import REGISTRY, CudnnFallbackWarning, UntunedWarning

__all__ = ["CudnnFallbackWarning", "UntunedWarning", "cache_path", "check_call", "clear_loaded", "conv2d",
           "is_torch", "loaded_kernels", "on_clear_loaded", "set_cache", "use_cudnn"]


def set_cache(location: str | os.PathLike | None) -> None:
    """Use the winners' cache at ``location``, a file path or a SQLAlchemy URL such as
    ``postgresql+psycopg://user@host/db`` (None: back to ``$AUTOCONV_CACHE`` or the
    default path). Kernels already loaded in this process stay."""
    REGISTRY.set_cache(location)


def cache_path():
    """The winners' cache ``conv2d`` reads: a file's Path, or a SQLAlchemy URL."""
    return REGISTRY.cache_location()


def use_cudnn(enabled: bool = True) -> None:
    """Allow (the default) or forbid running cuDNN for problems where the cache records
    cuDNN as faster than the tuned winner. Applies to problems not loaded yet; call
    :func:`clear_loaded` to re-decide the others."""
    REGISTRY.cudnn_allowed = bool(enabled)


def loaded_kernels() -> list[dict[str, Any]]:
    """What ``conv2d`` runs for each (device, problem) it has seen in this process:
    ``device``, ``problem`` (its spec string, with ``precision=tf32`` for tf32), ``origin``
    (``cache``: the tuned winner; ``cudnn``: cuDNN's plan, measured faster than the winner;
    ``default``: untuned), ``kernel`` (the kernel's name, or ``cudnn:<plan>``) and ``note``
    (empty, or how what runs differs from what was asked: a tf32 problem running its
    shape's fp32 winner says so here)."""
    return REGISTRY.loaded()


def clear_loaded() -> None:
    """Forget the kernels loaded in this process (the next call looks up the cache again)."""
    REGISTRY.clear()
    _calls.clear()
    for forget in _forgetters:
        forget()


#: What :func:`clear_loaded` also calls: the caches of layers built on the runtime that hold
#: its runners (:mod:`autoconv.torch.ops` registers its calls' when it is imported).
_forgetters: list[Callable[[], None]] = []


def on_clear_loaded(forget: Callable[[], None]) -> None:
    """Have :func:`clear_loaded` call ``forget`` as well (once, however often it is registered):
    a layer above the runtime that keeps runners registers how to drop them, since the runtime
    does not import it."""
    if forget not in _forgetters:
        _forgetters.append(forget)


#: (device, shapes, parameters, precision) -> (problem, runner): repeated calls skip
#: building the problem (~20 us of Python).
_calls: dict[tuple, tuple] = {}


def check_call(x, w, bias, out, precision):
    """What every ``autoconv.conv2d`` call is checked for first, whatever its arrays: the
    precision (returned, None left None) and no argument in host memory, so that the error is
    the same (and as clear) for every kind of array and where CuPy is missing.

    Raises:
        ProblemError: an unknown precision, a missing ``x`` or ``w``, or an argument that is not
            an array in GPU memory.
    """
    if precision is not None:
        precision = check_precision(precision)
    for name, value, shape in (("x", x, "(N, C, H, W)"), ("w", w, "(K, C, R, S)")):
        if value is None:
            raise ProblemError(name, None, f"{name} is required: a {shape} array in GPU memory; {_GPU_ARRAYS}")
    for name, value in (("x", x), ("w", w), ("bias", bias), ("out", out)):
        if value is not None:
            _refuse_host_memory(name, value)
    return precision


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, out=None, precision=None):
    """``y = conv2d(x, w) + bias`` on the GPU for CuPy arrays and other GPU arrays that are not
    PyTorch tensors (see the module docstring; ``autoconv.conv2d`` takes both).

    Args:
        precision: ``"fp32"``, ``"tf32"``, or None (``"fp32"``).

    Returns:
        ``y`` of shape (N, K, P, Q), float32: a CuPy array (``out`` itself when given).

    Raises:
        ProblemError: wrong dtype, shapes, layout, device, precision or parameters; a PyTorch
            tensor (``autoconv.conv2d`` or ``autoconv.torch.conv2d`` takes those).
        BackendUnavailable: CuPy is not installed.
    """
    precision = check_call(x, w, bias, out, precision)
    if is_torch(x):
        raise ProblemError("x", "torch.Tensor", "PyTorch tensors run through autoconv's PyTorch operator (PyTorch's "
                           "stream, allocator and autograd): call autoconv.conv2d or autoconv.torch.conv2d")
    if precision is None:
        precision = "fp32"
    if precision in ("bf16", "fp16"):
        raise ProblemError("precision", precision, "16-bit convolutions take PyTorch tensors (CuPy has no "
                           "bfloat16): pass bfloat16/float16 CUDA tensors, channels_last for no copy; CuPy "
                           "arrays are computed in 'fp32' or 'tf32'")

    from autoconv.gpu.device import require_cupy

    cupy = require_cupy()
    xa = _device_array(cupy, "x", x)
    wa = _device_array(cupy, "w", w)
    ba = _device_array(cupy, "bias", bias) if bias is not None else None
    oa = _device_array(cupy, "out", out) if out is not None else None
    check_shapes(tuple(xa.shape), tuple(wa.shape), None if ba is None else tuple(ba.shape))
    device_id = int(cupy.cuda.Device().id)
    for name, array in (("x", xa), ("w", wa), ("bias", ba), ("out", oa)):
        if array is not None and array.device.id != device_id:
            raise ProblemError(f"{name}.device", f"cuda:{array.device.id}",
                               f"the current device is cuda:{device_id}; move {name} there, or run the call "
                               f"under `with cupy.cuda.Device({array.device.id}):`")

    call_key = (device_id, xa.shape, wa.shape, _hashable(stride), _hashable(padding), _hashable(dilation),
                ba is not None, precision)
    try:
        problem, runner = _calls[call_key]
    except (KeyError, TypeError):
        problem = problem_of_call(tuple(xa.shape), tuple(wa.shape), stride, padding, dilation, ba is not None,
                                  precision)
        runner = REGISTRY.runner(problem, device_id)
        try:
            _calls[call_key] = (problem, runner)
        except TypeError:  # unhashable arguments: no shortcut next time
            pass
    if oa is not None and tuple(oa.shape) != problem.output_shape:
        raise ProblemError("out.shape", tuple(oa.shape), f"expected {problem.output_shape} for this convolution")

    with cupy.cuda.Device(device_id):
        stream = cupy.cuda.get_current_stream()
        if oa is None:
            oa = cupy.empty(problem.output_shape, dtype=cupy.float32)
        scratch = cupy.empty(runner.workspace_bytes, dtype=cupy.uint8) if runner.workspace_bytes else None
        workspace = 0 if scratch is None else scratch.data.ptr
        bias_ptr = 0 if ba is None else ba.data.ptr
        if runner.cudnn is not None:
            runner.cudnn(xa.data.ptr, wa.data.ptr, oa.data.ptr, bias_ptr or None, stream=stream.ptr,
                         workspace=workspace)
        else:
            runner.launcher((xa.data.ptr, wa.data.ptr, bias_ptr, oa.data.ptr, workspace), stream.ptr)
    return out if out is not None else oa


# ---- arguments --------------------------------------------------------------------------

def problem_of_call(x_shape: tuple, w_shape: tuple, stride, padding, dilation, bias: bool,
                    precision: str) -> ConvProblem:
    """The problem a :func:`conv2d` call computes: arrays of ``x_shape`` (N, C, H, W) and
    ``w_shape`` (K, C, R, S), the rest as the call gives it (padding resolved by
    :func:`~autoconv.runtime.arguments.resolve_geometry`, as for PyTorch tensors).

    Raises:
        ProblemError: naming the argument that is wrong.
    """
    N, C, H, W = (int(v) for v in x_shape)
    K, _, R, S = (int(v) for v in w_shape)
    stride, padding, dilation = resolve_geometry(stride, padding, dilation, H, W, R, S)
    return make_problem(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride, dilation=dilation, padding=padding,
                        bias=bias, precision=precision)


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def is_torch(value) -> bool:
    """Whether ``value`` is a PyTorch tensor (told without importing PyTorch)."""
    return type(value).__module__.split(".")[0] == "torch"


#: DLPack device types of memory a kernel can read: kDLCUDA, kDLCUDAManaged.
_DLPACK_CUDA_TYPES = (2, 13)
_GPU_ARRAYS = "autoconv.conv2d runs on the GPU and takes CuPy arrays or CUDA tensors"


def _refuse_host_memory(name: str, value) -> None:
    """ProblemError unless ``value`` can be an array in CUDA device memory: NumPy arrays,
    CPU tensors, DLPack arrays on other devices and objects that are no array at all are
    refused. Needs neither CuPy nor a GPU."""
    import numpy

    if isinstance(value, numpy.ndarray):
        raise ProblemError(name, "numpy.ndarray", f"{name} is a NumPy array in host memory; {_GPU_ARRAYS}: "
                           f"pass cupy.asarray({name}) (or torch.from_numpy({name}).cuda())")
    if is_torch(value):
        if not getattr(value, "is_cuda", False):
            raise ProblemError(name, f"torch tensor on {value.device}",
                               f"{name} is in host memory; {_GPU_ARRAYS}: move it with {name}.cuda()")
        return
    if hasattr(value, "__cuda_array_interface__"):
        return
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        try:
            device_type = int(value.__dlpack_device__()[0])
        except (TypeError, ValueError, IndexError) as err:
            raise ProblemError(name, type(value).__name__, f"cannot tell where {name} lives: its "
                               f"__dlpack_device__() failed ({err})") from None
        if device_type not in _DLPACK_CUDA_TYPES:
            raise ProblemError(name, type(value).__name__,
                               f"{name} is not in CUDA device memory (DLPack device type {device_type}, "
                               f"host memory or another kind of device); {_GPU_ARRAYS}")
        return
    raise ProblemError(name, type(value).__name__,
                       f"expected a CuPy array, a CUDA tensor, or an array with DLPack or "
                       f"__cuda_array_interface__ in GPU memory; {_GPU_ARRAYS}")


def _device_array(cupy, name: str, value):
    """``value`` as a CuPy array on its GPU (zero-copy), checked: float32, C-contiguous,
    in device memory (host memory was refused by :func:`_refuse_host_memory`)."""
    if isinstance(value, cupy.ndarray):
        array = value
    elif hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        array = cupy.from_dlpack(value)
    else:
        array = cupy.asarray(value)  # __cuda_array_interface__
    if array.dtype != cupy.float32:
        raise ProblemError(f"{name}.dtype", str(array.dtype),
                           f"autoconv.conv2d computes float32 only; convert {name} first "
                           f"({name}.astype('float32') or {name}.float())")
    if not array.flags.c_contiguous:
        raise ProblemError(name, "non-contiguous array",
                           f"{name} must be C-contiguous (NCHW); use cupy.ascontiguousarray({name})")
    return array
