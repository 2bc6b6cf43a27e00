"""``autoconv.conv2d``: run the tuned kernel for a convolution, in your own process.

    y = autoconv.conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, out=None)

Arguments follow :func:`torch.nn.functional.conv2d` (NCHW input ``x``, KCRS weights
``w``, optional ``(K,)`` bias; ``stride``/``dilation`` an int or a pair; ``padding`` an
int, a pair, ``'same'`` or ``'valid'``, and also a ``(top, bottom, left, right)``
4-tuple for asymmetric padding; ``groups`` is not supported). Arrays may be CuPy arrays,
PyTorch CUDA tensors or anything exposing DLPack or ``__cuda_array_interface__``; they
are used in place (zero-copy). A PyTorch input gives a PyTorch output and runs on
PyTorch's current stream; otherwise the output is a CuPy array on CuPy's current stream.

The kernel is the cached winner for this problem on this GPU (see
:mod:`autoconv.cache.winners`; the cache, a file or a SQLAlchemy URL, is :func:`set_cache`'s,
else ``$AUTOCONV_CACHE``, else the default path), compiled once per process. Where
``autoconv bench`` measured cuDNN's best strict-FP32 plan faster than the winner, that
cuDNN plan runs instead (through the cuDNN frontend, when it is installed;
:func:`use_cudnn` turns this off), so calling autoconv is never slower than calling cuDNN.
Without a usable entry, a sound default (``implicit_gemm``'s default config) runs and
:class:`UntunedWarning` says so, once per problem. :func:`loaded_kernels` tells what runs
for each problem seen so far. ``'same'`` follows TensorFlow's rule (odd padding at the
bottom/right), which for stride 1 matches PyTorch's.

Bad arguments raise :class:`~autoconv.errors.ProblemError` (float32 only; shapes that
disagree; non-contiguous, host, or other-device arrays) before anything is launched.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoconv.errors import AutoconvError, CacheError, ProblemError
from autoconv.kernels.families import FAMILY_NAMES, KernelPlan, get_family
from autoconv.problems.problem import ConvProblem, make_problem
from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT

#: The family whose default config runs untuned problems.
FALLBACK_FAMILY = "implicit_gemm"


class UntunedWarning(UserWarning):
    """No tuned kernel is cached for a problem: a default configuration runs instead."""


@dataclass
class _Runner:
    """What runs one problem on one device: an autoconv kernel, or a cuDNN plan."""
    plan: KernelPlan | None
    loaded: Any          # autoconv.gpu.kernels.LoadedPlan, None when cuDNN runs
    origin: str          # "cache", "default" or "cudnn"
    cudnn: Any = None    # autoconv.bench.baseline.CudnnConv where cuDNN beat the cached winner

    @property
    def name(self) -> str:
        return f"cudnn:{self.cudnn.plan_name}" if self.cudnn is not None else self.plan.name


_lock = threading.Lock()
_runners: dict[tuple[int, str], _Runner] = {}
_runner_specs: dict[tuple[int, str], str] = {}
_calls: dict[tuple, tuple[ConvProblem, _Runner]] = {}
_devices: dict[int, tuple] = {}
_warned: set[tuple[int, str]] = set()
_cache_path: Path | str | None = None  # a file, or a SQLAlchemy URL
_cudnn_allowed = True


def set_cache(location: str | os.PathLike | None) -> None:
    """Use the winners' cache at ``location``, a file path or a SQLAlchemy URL such as
    ``postgresql+psycopg://user@host/db`` (None: back to ``$AUTOCONV_CACHE`` or the
    default path). Kernels already loaded in this process stay."""
    from autoconv.cache.winners import is_url

    global _cache_path
    _cache_path = None if location is None else str(location) if is_url(location) else Path(location)


def cache_path() -> Path | str:
    """The winners' cache ``conv2d`` reads: a file's Path, or a SQLAlchemy URL."""
    from autoconv.cache.winners import default_location
    return _cache_path if _cache_path is not None else default_location()


def use_cudnn(enabled: bool = True) -> None:
    """Allow (the default) or forbid running cuDNN for problems where the cache records
    cuDNN as faster than the tuned winner. Applies to problems not loaded yet; call
    :func:`clear_loaded` to re-decide the others."""
    global _cudnn_allowed
    _cudnn_allowed = bool(enabled)


def loaded_kernels() -> list[dict[str, Any]]:
    """What ``conv2d`` runs for each (device, problem) it has seen in this process:
    ``device``, ``problem`` (its spec string), ``origin`` (``cache``: the tuned winner;
    ``cudnn``: cuDNN's plan, measured faster than the winner; ``default``: untuned) and
    ``kernel`` (the kernel's name, or ``cudnn:<plan>``)."""
    with _lock:
        return [{"device": key[0], "problem": _runner_specs[key], "origin": runner.origin, "kernel": runner.name}
                for key, runner in _runners.items()]


def clear_loaded() -> None:
    """Forget the kernels loaded in this process (the next call looks up the cache again)."""
    with _lock:
        _runners.clear()
        _runner_specs.clear()
        _calls.clear()
        _warned.clear()


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, out=None):
    """``y = conv2d(x, w) + bias`` on the GPU (see the module docstring).

    Returns:
        ``y`` of shape (N, K, P, Q), float32: a PyTorch tensor for PyTorch input, else a
        CuPy array (``out`` itself when given).

    Raises:
        ProblemError: wrong dtype, shapes, layout, device or parameters.
        BackendUnavailable: CuPy is not installed.
    """
    from autoconv.gpu.device import require_cupy

    # Host arrays and foreign objects are refused first, so that the error is the same
    # (and as clear) where CuPy is missing.
    for name, value in (("x", x), ("w", w), ("bias", bias), ("out", out)):
        if value is not None:
            _refuse_host_memory(name, value)
    cupy = require_cupy()
    torch_input = _is_torch(x)
    xa = _device_array(cupy, "x", x)
    wa = _device_array(cupy, "w", w)
    ba = _device_array(cupy, "bias", bias) if bias is not None else None
    oa = _device_array(cupy, "out", out) if out is not None else None

    if xa.ndim != 4:
        raise ProblemError("x.shape", tuple(xa.shape), "expected 4 dimensions (N, C, H, W)")
    if wa.ndim != 4:
        raise ProblemError("w.shape", tuple(wa.shape), "expected 4 dimensions (K, C, R, S)")
    if xa.shape[1] != wa.shape[1]:
        raise ProblemError("w.shape", tuple(wa.shape),
                           f"w has {wa.shape[1]} input channels but x has {xa.shape[1]} (x is N, C, H, W "
                           "and w is K, C, R, S; groups are not supported)")
    if ba is not None and tuple(ba.shape) != (wa.shape[0],):
        raise ProblemError("bias.shape", tuple(ba.shape), f"expected ({wa.shape[0]},): one value per filter")
    device_id = _current_device(cupy, torch_input, x)
    for name, array in (("x", xa), ("w", wa), ("bias", ba), ("out", oa)):
        if array is not None and array.device.id != device_id:
            raise ProblemError(f"{name}.device", f"cuda:{array.device.id}",
                               f"the current device is cuda:{device_id}; move {name} there, or run the call "
                               f"under `with cupy.cuda.Device({array.device.id}):` "
                               f"(PyTorch: `with torch.cuda.device({array.device.id}):`)")

    # Repeated calls with the same shapes skip building the problem (~20 us of Python).
    call_key = (device_id, xa.shape, wa.shape, _hashable(stride), _hashable(padding), _hashable(dilation),
                ba is not None)
    try:
        problem, runner = _calls[call_key]
    except (KeyError, TypeError):
        N, C, H, W = (int(v) for v in xa.shape)
        K, _, R, S = (int(v) for v in wa.shape)
        problem = make_problem(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride, dilation=dilation,
                               padding=padding, bias=ba is not None)
        runner = _runner(cupy, problem, device_id)
        try:
            _calls[call_key] = (problem, runner)
        except TypeError:  # unhashable arguments: no shortcut next time
            pass
    if oa is not None and tuple(oa.shape) != problem.output_shape:
        raise ProblemError("out.shape", tuple(oa.shape), f"expected {problem.output_shape} for this convolution")

    with cupy.cuda.Device(device_id):
        stream = _stream(cupy, torch_input, x)
        with stream:
            result = out
            if oa is None:
                if torch_input:
                    import torch
                    result = torch.empty(problem.output_shape, dtype=torch.float32, device=x.device)
                    oa = cupy.from_dlpack(result)
                else:
                    oa = result = cupy.empty(problem.output_shape, dtype=cupy.float32)
            if runner.cudnn is not None:
                workspace = runner.cudnn.workspace_bytes
                scratch = cupy.empty(workspace, dtype=cupy.uint8) if workspace else None
                runner.cudnn(xa.data.ptr, wa.data.ptr, oa.data.ptr, None if ba is None else ba.data.ptr,
                             stream=stream.ptr, workspace=0 if scratch is None else scratch.data.ptr)
                return result
            buffers = {"x": xa, "w": wa, "y": oa}
            if ba is not None:
                buffers["bias"] = ba
            if runner.plan.workspace_bytes:
                buffers["workspace"] = cupy.empty(runner.plan.workspace_elements, dtype=cupy.float32)
            runner.loaded.launch(buffers, stream=stream)
    return result


# ---- arguments --------------------------------------------------------------------------

def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def _is_torch(value) -> bool:
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
    if _is_torch(value):
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
    if _is_torch(value):
        if not value.is_contiguous():
            raise ProblemError(name, "non-contiguous tensor",
                               f"{name} must be contiguous (NCHW); use {name}.contiguous()")
        if value.requires_grad:
            raise ProblemError(name, "tensor requiring grad", "autoconv.conv2d computes the forward pass "
                               f"only; pass {name}.detach() (or call it under torch.no_grad())")
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


def _current_device(cupy, torch_input: bool, x) -> int:
    if torch_input:
        import torch
        return int(torch.cuda.current_device())
    return int(cupy.cuda.Device().id)


def _stream(cupy, torch_input: bool, x):
    if torch_input:
        import torch
        return cupy.cuda.ExternalStream(torch.cuda.current_stream(x.device).cuda_stream)
    return cupy.cuda.get_current_stream()


# ---- which kernel ------------------------------------------------------------------------

def _runner(cupy, problem: ConvProblem, device_id: int) -> _Runner:
    key = (device_id, problem.key())
    with _lock:
        runner = _runners.get(key)
        if runner is not None:
            return runner
        from autoconv.gpu.compiler import compile_source
        from autoconv.gpu.device import read_device
        from autoconv.gpu.kernels import LoadedPlan

        if device_id not in _devices:
            _devices[device_id] = read_device(device_id)
        limits, identity = _devices[device_id]
        plan, origin, why, entry = _winner_plan(problem, limits, identity)
        if entry is not None and _cudnn_allowed:
            with cupy.cuda.Device(device_id):
                cudnn = _cudnn_if_faster(problem, entry)
            if cudnn is not None:
                runner = _runners[key] = _Runner(plan, None, "cudnn", cudnn)
                _runner_specs[key] = problem.spec()
                return runner
        if plan is None:
            plan, origin = _default_plan(problem, limits), "default"
            if key not in _warned:
                _warned.add(key)
                warnings.warn(f"autoconv.conv2d: {why}; running {plan.family}'s default configuration for "
                              f"{problem.shape_str()} (correct, maybe slow). Tune it with `autoconv tune` "
                              "(problem spec: " + problem.spec() + ")", UntunedWarning, stacklevel=3)
        compiled = compile_source(plan.source, limits.arch, plan.name)
        if not compiled.ok:
            raise AutoconvError(f"autoconv.conv2d: the {origin} kernel {plan.name} does not compile with this "
                                f"CUDA (NVRTC):\n{compiled.reason()}")
        with cupy.cuda.Device(device_id):
            loaded = LoadedPlan(plan, compiled.cubin)
            trouble = loaded.resource_problem(limits)
            if trouble is not None and trouble[0] != "spills":  # spilling is slow, not wrong
                raise AutoconvError(f"autoconv.conv2d: the {origin} kernel {plan.name} cannot launch on "
                                    f"{limits.name}: {trouble[1]}")
            loaded.configure()
        runner = _runners[key] = _Runner(plan, loaded, origin)
        _runner_specs[key] = problem.spec()
        return runner


def _winner_plan(problem: ConvProblem, limits, identity):
    """``(plan, "cache", "", entry)`` for the cached winner, or ``(None, "", why, entry)``
    where none is usable (``entry`` None where the cache has none for this problem)."""
    from autoconv.cache.winners import CacheKey, WinnerCache, is_url

    location = cache_path()
    if not is_url(location) and not Path(location).exists():  # a reader creates no file
        return None, "", f"no winners' cache at {location}", None
    try:
        with WinnerCache(location) as winners:
            entry = winners.get(CacheKey.for_problem(identity, problem))
    except CacheError as err:
        return None, "", f"the winners' cache cannot be used ({err})", None
    if entry is None:
        return None, "", f"no tuned kernel for this problem on {identity.gpu_name} in {winners.location}", None
    if entry.family not in FAMILY_NAMES:
        return None, "", f"the cached winner's family {entry.family!r} is not part of this autoconv", entry
    limit = max(DEFAULT_WORKSPACE_LIMIT, entry.workspace_bytes)
    try:
        plan = get_family(entry.family).plan(problem, dict(entry.config), limits, limit)
    except AutoconvError as err:
        return None, "", f"the cached winner no longer fits ({err})", entry
    if plan.source_hash != entry.source_hash:
        return None, "", "the cached winner's source differs from what this autoconv renders (stale entry)", entry
    return plan, "cache", "", entry


class CudnnFallbackWarning(UserWarning):
    """cuDNN was measured faster for a problem but cannot run here: the tuned kernel runs."""


def _cudnn_if_faster(problem: ConvProblem, entry):
    """cuDNN's plan for ``problem`` when the cache entry says it beat the tuned winner
    (timed side by side by ``autoconv bench``) and the frontend can build it; else None."""
    if entry.baseline_time_ms is None or not entry.baseline_plan or entry.time_ms is None:
        return None
    if not entry.baseline_time_ms < entry.time_ms:
        return None
    from autoconv.bench.baseline import CudnnConv

    try:
        conv = CudnnConv.from_baseline_plan(problem, entry.baseline_plan)
        if not conv.exact:
            raise AutoconvError(f"this cuDNN has no plan {conv.plan_name!r} (another cuDNN version "
                                "measured it; run `autoconv bench` again)")
        return conv
    except AutoconvError as err:  # frontend missing, plan unknown to this cuDNN, ...
        warnings.warn(f"autoconv.conv2d: cuDNN was measured faster for {problem.shape_str()} "
                      f"({entry.baseline_time_ms:.4g} ms vs {entry.time_ms:.4g} ms) but cannot run here "
                      f"({err}); running the tuned kernel", CudnnFallbackWarning, stacklevel=4)
        return None


def _default_plan(problem: ConvProblem, limits) -> KernelPlan:
    """The fallback family's default config; else any family's, in registry order."""
    reasons = []
    for name in (FALLBACK_FAMILY, *[n for n in FAMILY_NAMES if n != FALLBACK_FAMILY]):
        try:
            return get_family(name).plan(problem, None, limits)
        except AutoconvError as err:
            reasons.append(f"{name}: {err}")
    raise AutoconvError(f"autoconv.conv2d: no kernel family can run {problem.shape_str()}:\n  "
                        + "\n  ".join(reasons))
