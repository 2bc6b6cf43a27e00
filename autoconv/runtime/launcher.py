"""A loaded plan's launches at the cost of one driver call each.

:class:`Launcher` is what a call of ``conv2d`` runs once its kernel is chosen and loaded.
Everything that depends only on (plan, device) is resolved when it is built: each
launch's ``CUfunction``, grid, block, shared memory and where each kernel argument comes
from. A call then writes the device pointers into preallocated argument arrays and calls
``cuLaunchKernel`` through CuPy's Cython binding of the driver (a kernel call through
CuPy's ``Function`` object costs several microseconds more per launch: it converts every
argument and wraps the stream).

A launch argument that is one of the plan's tensor maps (TMA families) points at the map's
128 bytes, encoded for the buffer it describes at each call
(:class:`autoconv.gpu.tensor_maps.MapSlot`: only when the buffer's address changed).

A plan's launches start with the weights transforms (launches that read ``w`` and write
the workspace only: the rsc reorder, the 3xTF32 split, wgmma's swizzle), followed by the
launches that read ``x``. The transformed weights depend on ``w`` alone, so a caller
that knows ``w`` is unchanged may skip them (``prepare_weights=False``) and pass the
workspace they wrote before: :mod:`autoconv.torch` does this keyed on the tensor's
version counter.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

from autoconv.errors import AutoconvError
from autoconv.gpu.tensor_maps import MapSlot
from autoconv.kernels.families import BUFFER_NAMES, KernelPlan

#: Position of each buffer in the pointer tuple a call passes: (x, w, bias, y, workspace).
BUFFER_INDEX = {name: index for index, name in enumerate(BUFFER_NAMES)}
#: The arguments of a launch that prepares the weights: it reads w and writes the workspace.
WEIGHTS_TRANSFORM_ARGS = ("w", "workspace")


class LaunchError(AutoconvError):
    """The CUDA driver refused a launch (the message has its error name)."""


@dataclass(frozen=True)
class _RawLaunch:
    function: int                     # CUfunction
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    buffers: tuple[int, ...]          # BUFFER_INDEX of each kernel argument, in order (-1: a tensor map)
    values: ctypes.Array              # the arguments' device pointers, written per call
    pointers: ctypes.Array            # void* kernelParams[]: the address of each value
    params: int                       # the address of ``pointers``
    maps: tuple[tuple[MapSlot, int], ...] = ()   # tensor-map arguments: slot, BUFFER_INDEX of its buffer


class Launcher:
    """Runs ``plan``'s launches, whose kernels ``functions`` maps by name to CUfunction
    handles (ints) of modules loaded on one device.

    Args:
        plan: the kernel plan (its launches and workspace size).
        functions: kernel name -> CUfunction handle, for every kernel the plan launches.
    """

    def __init__(self, plan: KernelPlan, functions: dict[str, int]):
        self.plan = plan
        self.workspace_bytes = plan.workspace_bytes
        self.workspace_elements = plan.workspace_elements
        launches = [self._raw(launch, functions[launch.kernel], plan.tensor_maps) for launch in plan.launches]
        count = 0
        while count < len(plan.launches) and plan.launches[count].args == WEIGHTS_TRANSFORM_ARGS:
            count += 1
        #: Leading launches that only transform w into the workspace.
        self.weights_launches = tuple(launches[:count])
        self.main_launches = tuple(launches[count:])
        self._lock = threading.Lock()

    @property
    def transforms_weights(self) -> bool:
        """Whether the plan writes transformed weights to its workspace before the GEMM."""
        return bool(self.weights_launches)

    @staticmethod
    def _raw(launch, function: int, tensor_maps) -> _RawLaunch:
        """A tensor-map argument points at its slot's 128 bytes (encoded per call, for the buffer
        the map describes: :class:`autoconv.gpu.tensor_maps.MapSlot`); every other argument at
        its device pointer's place in ``values``."""
        values = (ctypes.c_void_p * len(launch.args))()
        base = ctypes.addressof(values)
        size = ctypes.sizeof(ctypes.c_void_p)
        addresses, maps = [base + i * size for i in range(len(launch.args))], []
        for i, name in enumerate(launch.args):
            if name in tensor_maps:
                slot = MapSlot(tensor_maps[name])
                addresses[i] = slot.address
                maps.append((slot, BUFFER_INDEX[tensor_maps[name].buffer]))
        pointers = (ctypes.c_void_p * len(launch.args))(*addresses)
        return _RawLaunch(int(function), tuple(launch.grid), tuple(launch.block), int(launch.shared_bytes),
                          tuple(-1 if name in tensor_maps else BUFFER_INDEX[name] for name in launch.args),
                          values, pointers, ctypes.addressof(pointers), tuple(maps))

    def __call__(self, buffers: tuple[int, int, int, int, int], stream: int, *, prepare_weights: bool = True) -> None:
        """Enqueue the launches on ``stream`` (a ``cudaStream_t`` as an int; 0: the legacy
        default stream) with ``buffers`` = device pointers (x, w, bias, y, workspace), 0
        for a buffer the plan does not use. ``prepare_weights=False`` skips the weights
        transforms: the workspace must then hold what they wrote for this ``w``.

        Raises:
            LaunchError: the driver refused a launch.
        """
        launches = self.weights_launches + self.main_launches if prepare_weights else self.main_launches
        with self._lock:  # the argument arrays are shared by the calls of every thread
            for raw in launches:
                values = raw.values
                for slot, index in enumerate(raw.buffers):
                    if index >= 0:
                        values[slot] = buffers[index]
                for map_slot, index in raw.maps:
                    map_slot.fill(buffers[index])
                try:
                    _launch_kernel(raw.function, raw.grid[0], raw.grid[1], raw.grid[2], raw.block[0], raw.block[1],
                                   raw.block[2], raw.shared_bytes, stream, raw.params, 0)
                except _DriverError as err:
                    raise LaunchError(f"cuLaunchKernel failed for {self.plan.name}: {err}") from None


# ---- the CUDA driver ----------------------------------------------------------------------------

def _launch_kernel(function: int, grid_x: int, grid_y: int, grid_z: int, block_x: int, block_y: int, block_z: int,
                   shared_bytes: int, stream: int, params: int, extra: int) -> None:
    """``cuLaunchKernel`` (CuPy's binding; raises :data:`_DriverError` with the error's name).
    Bound on first use, so that importing this module needs no CuPy."""
    global _launch_kernel, _DriverError
    from cupy.cuda import driver

    _DriverError = driver.CUDADriverError  # type: ignore[misc]  # (the stand-in class below, rebound)
    _launch_kernel = driver.launchKernel
    _launch_kernel(function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream, params, extra)


class _DriverError(Exception):
    """Stands for CuPy's CUDADriverError until the driver binding is loaded."""
