"""Run launches of an emulated program on host buffers, in a subprocess.

The program runs in its own process: the sanitizers' runtime loads with it (not into
Python), and a kernel that crashes (an AddressSanitizer report, a segfault, a fault the
emulator detects) fails that run with the report, not the caller. Buffers travel as raw
files in a temporary folder; the program allocates each with exactly its size, so any
access past its end is reported. TMA tensor maps travel as 128-byte buffers in the emulator's
encoding (:mod:`autoconv.emulator.tensor_maps`), into which the program writes the address of
the buffer each describes.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy

from autoconv import settings
from autoconv.emulator import tensor_maps as emulated_maps
from autoconv.emulator.errors import EmulatedKernelFault, EmulationTimeout

if TYPE_CHECKING:
    from autoconv.kernels.tensor_maps import TensorMap

#: Seconds an emulated program may run before it is killed (a kernel that never returns).
DEFAULT_TIMEOUT_S = 300.0

# ASan's own settings for emulated programs: stop at the first error; no leak check (the
# emulator's fibers and exits are not leaks); fake stacks off (fibers switch stacks).
_SANITIZER_ENV = {
    "ASAN_OPTIONS": "halt_on_error=1:detect_leaks=0:detect_stack_use_after_return=0:"
                    "print_summary=1:allocator_may_return_null=0",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}
# ASan warns once per program that it "doesn't fully support makecontext/swapcontext";
# the emulator annotates its fiber switches, so the warning is noise.
_SWAPCONTEXT_WARNING = re.compile(r"^==\d+==WARNING: ASan doesn't fully support makecontext/swapcontext.*\n?",
                                  re.MULTILINE)
_BUFFER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class LaunchLike(Protocol):
    """What :meth:`EmulatedProgram.run` needs of a launch (e.g. :class:`autoconv.kernels.families.Launch`)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[str, ...]
    shared_bytes: int


def default_workers() -> int:
    """OS threads that run blocks: ``$AUTOCONV_EMU_WORKERS``, else the usable CPUs (at most 8)."""
    configured = settings.EMU_WORKERS.value()
    if configured is not None:
        return configured
    return max(1, min(len(os.sched_getaffinity(0)), 8))


@dataclass(frozen=True)
class EmulatedProgram:
    """A built emulated program (see :func:`autoconv.emulator.compile_program`)."""

    path: Path
    kernels: tuple[str, ...]

    def run(self, launches: Sequence[LaunchLike], buffers: Mapping[str, numpy.ndarray], *,
            workers: int | None = None, timeout: float | None = None,
            reverse_blocks: bool = False,
            tensor_maps: Mapping[str, TensorMap] | None = None,
            constants: Mapping[str, int] | None = None) -> dict[str, numpy.ndarray]:
        """Run ``launches`` in order, like one CUDA stream, on copies of ``buffers``.

        Each launch passes, in order, the buffers its ``args`` name (as device pointers
        to their data), or the tensor maps they name (by value, the kernel's
        ``const __grid_constant__ tma::TensorMap`` parameters). Every block of a launch runs
        (on ``workers`` OS threads) before the next launch starts. Blocks are taken in index
        order, or from the last with ``reverse_blocks`` (a kernel whose blocks communicate
        must be right in either).

        Args:
            tensor_maps: TMA tensor maps by name (a plan's ``tensor_maps``), each encoded
                for the buffer it names (:func:`autoconv.emulator.tensor_maps.encode`).
            constants: values of the source's ``__constant__ int`` sizes (a plan's
                ``constants``), set before the first launch; each must be one the program
                was built with (:func:`autoconv.emulator.compile_program`).

        Returns:
            every buffer after the last launch, by name (new arrays, same shape and dtype);
            not the maps.

        Raises:
            ValueError: a buffer or map name is not a C identifier, a map's name is also a
                buffer's, a map names a buffer not given or covers more bytes than it has,
                or the driver would refuse a map.
            EmulatedKernelFault: the program failed: a sanitizer report, a fault the
                emulator detected, or a launch CUDA would refuse (too many threads,
                too much shared memory, wrong argument count); the message has its output.
            EmulationTimeout: it ran longer than ``timeout`` seconds.
        """
        arrays = {name: numpy.ascontiguousarray(array) for name, array in buffers.items()}
        for name in arrays:
            if not _BUFFER_NAME.match(name):
                raise ValueError(f"buffer name {name!r} must be a C identifier")
        maps = {name: emulated_maps.encode(tensor_map, name) for name, tensor_map in (tensor_maps or {}).items()}
        for name, tensor_map in (tensor_maps or {}).items():
            if not _BUFFER_NAME.match(name):
                raise ValueError(f"tensor map name {name!r} must be a C identifier")
            if name in arrays:
                raise ValueError(f"{name!r} names both a buffer and a tensor map")
            if tensor_map.buffer not in arrays:
                raise ValueError(f"tensor map {name} describes buffer {tensor_map.buffer!r}, which is not among "
                                 f"the buffers ({', '.join(arrays)})")
            end = tensor_map.offset + emulated_maps.extent_bytes(tensor_map)
            if end > arrays[tensor_map.buffer].nbytes:
                raise ValueError(f"tensor map {name} covers bytes {tensor_map.offset} to {end} of buffer "
                                 f"{tensor_map.buffer}, which has {arrays[tensor_map.buffer].nbytes}")
        workers = default_workers() if workers is None else workers
        timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
        with tempfile.TemporaryDirectory(prefix="autoconv-emu-") as folder:
            work = Path(folder)
            lines = [f"workers {workers}", f"order {'reverse' if reverse_blocks else 'forward'}"]
            for name, array in {**arrays, **maps}.items():
                array.tofile(work / f"{name}.bin")
                lines.append(f"buffer {name} {array.nbytes} {work / f'{name}.bin'}")
            for name, tensor_map in (tensor_maps or {}).items():
                lines.append(f"address {name} {tensor_map.buffer} {tensor_map.offset}")
            for name, value in (constants or {}).items():
                lines.append(f"constant {name} {int(value)}")
            for launch in launches:
                lines.append(" ".join(str(v) for v in (
                    "launch", launch.kernel, *launch.grid, *launch.block, launch.shared_bytes, *launch.args)))
            manifest = work / "manifest.txt"
            manifest.write_text("\n".join(lines) + "\n")
            try:
                result = subprocess.run([str(self.path), str(manifest)], capture_output=True, text=True,
                                        errors="replace", timeout=timeout, check=False,
                                        env={**os.environ, **_SANITIZER_ENV})
            except subprocess.TimeoutExpired as expired:
                raise EmulationTimeout(
                    f"{self.path.name} ran longer than {timeout:g} s and was stopped (does a kernel loop "
                    f"forever?)", _text(expired.stdout) + _text(expired.stderr)) from None
            output = _SWAPCONTEXT_WARNING.sub("", result.stdout + result.stderr)
            if result.returncode != 0:
                raise EmulatedKernelFault(
                    f"{self.path.name} failed ({_describe_status(result.returncode)}) running "
                    f"{', '.join(launch.kernel for launch in launches)}", output)
            return {name: numpy.fromfile(work / f"{name}.bin", dtype=array.dtype).reshape(array.shape)
                    for name, array in arrays.items()}


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _describe_status(returncode: int) -> str:
    if returncode < 0:
        return f"killed by signal {-returncode}"
    return {1: "a sanitizer report", 2: "a launch the GPU would refuse",
            3: "a kernel fault"}.get(returncode, f"exit status {returncode}")
