"""A plan's compiled kernels on the GPU: load, check resources, launch.

:class:`LoadedPlan` loads a cubin into the current CUDA context, reads each kernel's
registers, local memory and static shared memory from the driver, and runs the plan:
its launches in order, each given the device pointers of the buffers it names
(``x``, ``w``, ``bias``, ``y``, ``workspace``). A plan whose source takes the problem's
sizes at run time gets them written into the module's ``__constant__`` values on load: each
``LoadedPlan`` has a module of its own, so plans of one cubin never share them. The tuner's GPU
worker and :func:`autoconv.conv2d` both run kernels through it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from dataclasses import dataclass

from autoconv.gpu.tensor_maps import MapSlot
from autoconv.kernels.families import KernelPlan
from autoconv.kernels.limits import DeviceLimits

#: Dynamic shared memory a kernel may use without opting in.
DEFAULT_DYNAMIC_SHARED_BYTES = 48 * 1024

# CUfunction_attribute values (cuda.h; part of the driver's stable ABI).
_MAX_THREADS_PER_BLOCK = 0
_SHARED_SIZE_BYTES = 1
_LOCAL_SIZE_BYTES = 3
_NUM_REGS = 4
_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


@dataclass(frozen=True)
class KernelResources:
    """What the driver reports for one kernel of a loaded module."""

    kernel: str
    registers: int            # per thread
    local_bytes: int          # per thread: spills and local arrays
    static_shared_bytes: int  # __shared__ arrays (autoconv's templates use dynamic only)
    max_threads_per_block: int  # given its registers


class LoadedPlan:
    """``plan``'s kernels from ``cubin``, loaded on the current device.

    Raises whatever the driver raises when the cubin does not load (e.g. built for
    another architecture); callers decide what that means.
    """

    def __init__(self, plan: KernelPlan, cubin: bytes):
        import cupy

        self.plan = plan
        self._module = cupy.cuda.function.Module()
        self._module.load(cubin)
        names = list(dict.fromkeys(launch.kernel for launch in plan.launches))
        self._functions = {name: self._module.get_function(name) for name in names}
        self._resources = {name: _read_resources(name, function) for name, function in self._functions.items()}
        _set_constants(self._module, plan.constants)
        self._configured = False
        self._map_slots: dict[tuple[str, str], MapSlot] = {}   # (kernel, map name) -> its encoded map

    @property
    def resources(self) -> list[KernelResources]:
        return list(self._resources.values())

    def function_handles(self) -> dict[str, int]:
        """Kernel name -> its ``CUfunction`` handle (valid while this object lives), for
        callers that launch through the driver themselves (:mod:`autoconv.runtime`)."""
        return {name: int(function.ptr) for name, function in self._functions.items()}

    def resources_of(self, kernel: str) -> KernelResources:
        return self._resources[kernel]

    def resource_problem(self, device: DeviceLimits) -> tuple[str, str] | None:
        """``("spills" | "out_of_resources", reason)`` when a launch cannot run well or at
        all on ``device``; None when every launch fits."""
        for launch in self.plan.launches:
            used = self._resources[launch.kernel]
            if launch.threads > used.max_threads_per_block:
                return ("out_of_resources",
                        f"{launch.kernel} uses {used.registers} registers per thread, so at most "
                        f"{used.max_threads_per_block} threads per block can launch; the plan launches "
                        f"{launch.threads} (fewer threads per block or smaller thread tiles)")
            shared = used.static_shared_bytes + launch.shared_bytes
            if shared > device.max_shared_bytes:
                return ("out_of_resources",
                        f"{launch.kernel} needs {shared} bytes of shared memory per block "
                        f"({used.static_shared_bytes} static + {launch.shared_bytes} dynamic); "
                        f"{device.name} allows {device.max_shared_bytes}")
        for used in self._resources.values():
            if used.local_bytes > 0:
                return ("spills",
                        f"{used.kernel} uses {used.local_bytes} bytes of local memory per thread "
                        f"with {used.registers} registers (register spills or a dynamically indexed "
                        f"array): rejected before timing")
        return None

    def configure(self) -> None:
        """Opt each kernel in to the dynamic shared memory its launches need beyond 48 KiB."""
        if self._configured:
            return
        from cupy.cuda import driver

        needed: dict[str, int] = {}
        for launch in self.plan.launches:
            needed[launch.kernel] = max(needed.get(launch.kernel, 0), launch.shared_bytes)
        for name, shared in needed.items():
            if shared > DEFAULT_DYNAMIC_SHARED_BYTES:
                driver.funcSetAttribute(self._functions[name].ptr, _MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        self._configured = True

    def launch(self, buffers: Mapping[str, object], stream=None) -> None:
        """Enqueue the plan's launches on ``stream`` (default: CuPy's current stream).

        ``buffers`` maps the names the launches use to CuPy arrays (or anything CuPy
        accepts as a kernel argument); ``workspace`` is needed when the plan has one.
        """
        if not self._configured:
            self.configure()
        for launch in self.plan.launches:
            if any(name in self.plan.tensor_maps for name in launch.args):
                self._launch_with_tensor_maps(launch, buffers, stream)
                continue
            self._functions[launch.kernel](launch.grid, launch.block,
                                           tuple(buffers[name] for name in launch.args),
                                           shared_mem=launch.shared_bytes, stream=stream)

    def _launch_with_tensor_maps(self, launch, buffers: Mapping[str, object], stream) -> None:
        """A launch that takes tensor maps by value: through the driver, with a parameter array of
        the buffers' device pointers and the maps encoded for the buffers they describe
        (:mod:`autoconv.gpu.tensor_maps`; a slot per map re-encodes only for a new address)."""
        import cupy
        from cupy.cuda import driver

        pointers, values = [], []
        for name in launch.args:
            tensor_map = self.plan.tensor_maps.get(name)
            if tensor_map is not None:
                slot = self._map_slots.get((launch.kernel, name))
                if slot is None:
                    slot = self._map_slots[(launch.kernel, name)] = MapSlot(tensor_map)
                pointers.append(slot.fill(_device_address(buffers[tensor_map.buffer])))
            else:
                value = ctypes.c_uint64(_device_address(buffers[name]))
                values.append(value)
                pointers.append(ctypes.addressof(value))
        params = (ctypes.c_void_p * len(pointers))(*pointers)
        stream_handle = (stream if stream is not None else cupy.cuda.get_current_stream()).ptr
        driver.launchKernel(self._functions[launch.kernel].ptr, *launch.grid, *launch.block, launch.shared_bytes,
                            stream_handle, ctypes.addressof(params), 0)


def _device_address(buffer) -> int:
    """The device address of a kernel argument: a CuPy array's data, an int as is, None as 0."""
    if buffer is None:
        return 0
    if isinstance(buffer, int):
        return buffer
    return int(buffer.data.ptr)


def _set_constants(module, constants: Mapping[str, int]) -> None:
    """Writes each ``__constant__ int`` of ``module`` named in ``constants`` (synchronously: the
    values are in place before any launch of the module)."""
    import numpy
    from cupy.cuda import driver, runtime

    for name, value in constants.items():
        address = driver.moduleGetGlobal(module.ptr, name)
        if isinstance(address, tuple):  # (address, bytes) in some CuPy versions
            address = address[0]
        host = numpy.array([value], dtype=numpy.int32)
        runtime.memcpy(int(address), host.ctypes.data, host.nbytes, runtime.memcpyHostToDevice)


def _read_resources(name: str, function) -> KernelResources:
    from cupy.cuda import driver

    def attribute(which: int) -> int:
        return int(driver.funcGetAttribute(which, function.ptr))

    return KernelResources(
        kernel=name,
        registers=attribute(_NUM_REGS),
        local_bytes=attribute(_LOCAL_SIZE_BYTES),
        static_shared_bytes=attribute(_SHARED_SIZE_BYTES),
        max_threads_per_block=attribute(_MAX_THREADS_PER_BLOCK),
    )

