"""Running candidate kernels on a CUDA GPU through CuPy.

- :mod:`autoconv.gpu.device`: the device's limits and versions, read off the GPU.
- :mod:`autoconv.gpu.compiler`: CUDA source to cubin with NVRTC, in a pool of
  compiler processes (the GPU never waits for the compiler).
- :mod:`autoconv.gpu.kernels`: a plan's cubin loaded, its resources checked, its
  launches run on named buffers (shared by the tuner and :func:`autoconv.conv2d`).
- :mod:`autoconv.gpu.worker`: the GPU worker process: verify, then time, one candidate
  at a time.
- :mod:`autoconv.gpu.backend`: :class:`CupyBackend`, the tuner's GPU backend: it
  supervises the worker and replaces it when a candidate kills it or hangs.

Nothing here imports CuPy at module import time; ``import autoconv`` works without it.
"""

from __future__ import annotations

__all__ = ["CupyBackend"]


def __getattr__(name: str):
    if name == "CupyBackend":
        from autoconv.gpu.backend import CupyBackend
        return CupyBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
