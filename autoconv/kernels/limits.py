"""The limits of a GPU that decide which kernel configurations are valid.

Search spaces read these by name (``max_threads_per_block``, ``max_shared_bytes``...).
On a machine without a GPU (CI, ``autoconv render``) the H100's limits stand in; on a
GPU they are read off the device by the CuPy backend.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class DeviceLimits:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    max_threads_per_block: int
    #: Shared memory one block may use after opting in (cudaFuncAttributeMaxDynamicSharedMemorySize).
    max_shared_bytes: int
    max_registers_per_block: int
    max_registers_per_thread: int
    warp_size: int
    l2_bytes: int
    global_memory_bytes: int

    @property
    def arch(self) -> str:
        """The nvcc/NVRTC target to compile for: ``sm_XY``, or on Hopper (9.0) ``sm_90a``, the
        target with its architecture-specific instructions (wgmma), whose code runs on 9.0
        devices only, the very device autoconv compiles for."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")

    def variables(self) -> dict[str, int]:
        """The names a search-space expression may use for this device."""
        return {
            "sm_count": self.sm_count,
            "max_threads_per_block": self.max_threads_per_block,
            "max_shared_bytes": self.max_shared_bytes,
            "max_registers_per_block": self.max_registers_per_block,
            "max_registers_per_thread": self.max_registers_per_thread,
            "warp_size": self.warp_size,
            "compute_capability": self.compute_capability[0] * 10 + self.compute_capability[1],
        }

    def as_dict(self) -> dict:
        return asdict(self)


#: The NVIDIA H100 SXM (sm_90), autoconv's reference GPU.
H100 = DeviceLimits(
    name="NVIDIA H100 80GB HBM3",
    compute_capability=(9, 0),
    sm_count=132,
    max_threads_per_block=1024,
    max_shared_bytes=227 * 1024,
    max_registers_per_block=65536,
    max_registers_per_thread=255,
    warp_size=32,
    l2_bytes=50 * 1024 * 1024,
    global_memory_bytes=80 * 1024**3,
)
