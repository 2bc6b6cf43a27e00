"""The runtime users call: run the tuned kernel for a convolution in their own process.

- :mod:`autoconv.runtime.api`: :func:`conv2d` for CuPy arrays, DLPack and
  ``__cuda_array_interface__`` objects and PyTorch tensors; which kernel runs per problem
  (the cached winner, cuDNN where it was measured faster, or a default).
- :mod:`autoconv.runtime.selection`: which kernel runs a problem; :mod:`autoconv.runtime.launcher`
  and :mod:`autoconv.runtime.cudnn`: running it (a tuned kernel, or a named cuDNN plan).

``import autoconv.runtime`` needs neither CuPy nor a GPU.
"""

from __future__ import annotations

from autoconv.runtime.api import (
    CudnnFallbackWarning,
    UntunedWarning,
    cache_path,
    clear_loaded,
    conv2d,
    loaded_kernels,
    set_cache,
    use_cudnn,
)

__all__ = ["CudnnFallbackWarning", "UntunedWarning", "cache_path", "clear_loaded", "conv2d", "loaded_kernels",
           "set_cache", "use_cudnn"]
