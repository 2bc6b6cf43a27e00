"""One measurement at a time on a GPU, across processes.

Several tuning workers may share a GPU (``autoconv tune --workers-per-gpu 2``, or two
``autoconv tune`` runs at once): their candidates compile in parallel, but a kernel timed while
another process's kernels run on the same GPU is timed wrong, and a reference convolution
computed meanwhile slows whatever runs beside it. So each GPU worker holds its GPU's lock while
it prepares a problem's buffers and while it verifies and times a candidate.

The lock is an advisory ``flock`` on a file named after the device's PCI bus id in the temporary
folder (the bus id, not the CUDA index, because ``CUDA_VISIBLE_DEVICES`` renumbers devices per
process). The operating system releases it when its holder exits, killed or not: a dead worker
leaves no stale lock. Where ``fcntl`` does not exist (Windows) there is no lock, and workers
sharing a GPU would time each other's kernels.
"""

from __future__ import annotations

import os
import re
import tempfile
import time

try:
    import fcntl
except ImportError:  # (Windows)
    fcntl = None  # type: ignore[assignment]


class GpuLock:
    """A re-usable exclusive lock over one GPU, for ``with`` blocks; ``waited_s`` adds up the
    seconds spent waiting for another process to release it.

    Args:
        key: names the GPU (its PCI bus id; any text, made safe for a file name).
        folder: where the lock file lives (default: the temporary folder).
    """

    def __init__(self, key: str, folder: str | os.PathLike | None = None):
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", key) or "gpu"
        self.path = os.path.join(folder or tempfile.gettempdir(), f"autoconv-gpu-{safe}.lock")
        self.waited_s = 0.0
        self._fd: int | None = None
        self._depth = 0

    @classmethod
    def for_device(cls, device_id: int) -> GpuLock:
        """The lock of CUDA device ``device_id`` of this process (needs CuPy)."""
        import cupy

        return cls(cupy.cuda.Device(device_id).pci_bus_id)

    def __enter__(self) -> GpuLock:
        self._depth += 1
        if self._depth == 1 and fcntl is not None:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except PermissionError:  # another user's lock file: a read-only descriptor locks it too
                self._fd = os.open(self.path, os.O_RDONLY)
            started = time.perf_counter()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            self.waited_s += time.perf_counter() - started
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
