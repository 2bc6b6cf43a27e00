"""The GPU as CuPy sees it: its limits (which configs are valid) and its identity
(what a timing depends on: GPU, compute capability, CUDA runtime and driver)."""

from __future__ import annotations

from autoconv.backends.base import BackendIdentity
from autoconv.errors import BackendUnavailable
from autoconv.kernels.limits import DeviceLimits

INSTALL_HINT = ("install CuPy for your CUDA version: pip install 'autoconv[cuda13]' (CUDA 13) or "
                "'autoconv[cuda12]' (CUDA 12)")

#: cudaDevAttrMaxSharedMemoryPerBlockOptin: shared memory a block may use after opting in.
_ATTR_MAX_SHARED_OPTIN = 97
#: Registers one thread may use on every architecture autoconv targets (sm_50 and later).
MAX_REGISTERS_PER_THREAD = 255


def require_cupy():
    """The ``cupy`` module, or :class:`BackendUnavailable` saying how to install it."""
    try:
        import cupy
    except ImportError as err:
        raise _not_installed(err) from None
    return cupy


def require_nvrtc():
    """CuPy's NVRTC binding alone, or :class:`BackendUnavailable` saying how to install CuPy. A
    compiler process needs nothing else of CuPy, whose whole import takes ~2.5 CPU-s, and a tuning
    run starts ~15 of them at once (docs/lab-notes/2026-11-28-tune-start-up.md)."""
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError as err:
        raise _not_installed(err) from None
    return nvrtc


def _not_installed(err: ImportError) -> BackendUnavailable:
    return BackendUnavailable(f"CuPy is not installed ({err}); {INSTALL_HINT}")


def read_device(device_id: int = 0) -> tuple[DeviceLimits, BackendIdentity]:
    """The limits and identity of CUDA device ``device_id``.

    Raises:
        BackendUnavailable: no CuPy, no CUDA driver, no GPU, or no device of that index.
    """
    cupy = require_cupy()
    runtime = cupy.cuda.runtime
    try:
        count = runtime.getDeviceCount()
    except runtime.CUDARuntimeError as err:
        raise BackendUnavailable(f"no usable CUDA GPU: {err}") from None
    if count < 1:
        raise BackendUnavailable("no CUDA GPU on this machine")
    if not 0 <= device_id < count:
        raise BackendUnavailable(f"CUDA device {device_id} does not exist: this machine has {count} "
                                 f"(devices 0 to {count - 1}); set 'device' in the config")
    props = runtime.getDeviceProperties(device_id)
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    shared_optin = props.get("sharedMemPerBlockOptin") or runtime.deviceGetAttribute(
        _ATTR_MAX_SHARED_OPTIN, device_id)
    limits = DeviceLimits(
        name=name,
        compute_capability=(int(props["major"]), int(props["minor"])),
        sm_count=int(props["multiProcessorCount"]),
        max_threads_per_block=int(props["maxThreadsPerBlock"]),
        max_shared_bytes=int(shared_optin),
        max_registers_per_block=int(props["regsPerBlock"]),
        max_registers_per_thread=MAX_REGISTERS_PER_THREAD,
        warp_size=int(props["warpSize"]),
        l2_bytes=int(props["l2CacheSize"]),
        global_memory_bytes=int(props["totalGlobalMem"]),
    )
    identity = BackendIdentity(gpu_name=name, compute_capability=limits.compute_capability,
                               cuda_runtime=int(runtime.runtimeGetVersion()),
                               cuda_driver=int(runtime.driverGetVersion()), backend="cupy")
    return limits, identity
