"""What the wgmma tests (test_wgmma_tf32.py, test_wgmma_f16.py) do on the GPU alike: load their
one-warpgroup kernels, run one on D = A * B^T + C, and measure how far the GPU's results lie
from the emulator model's. Not a test module."""

from __future__ import annotations

import numpy as np


def load_module(source: str, name: str):
    """``source`` compiled by the tuner's compiler for this GPU, loaded as a CuPy module."""
    import cupy

    from autoconv.gpu.compiler import compile_source
    from autoconv.gpu.device import read_device

    compiled = compile_source(source, read_device()[0].arch, name)
    assert compiled.ok, compiled.log
    module = cupy.cuda.function.Module()
    module.load(compiled.cubin)
    return module


def run_warpgroup(module, kernel: str, a, bt, c, shared_bytes: int) -> np.ndarray:
    """``kernel(a, bt, c, d)`` on one block of one warpgroup; d, poisoned with NaN before."""
    import cupy

    d = cupy.full(c.shape, np.nan, np.float32)
    module.get_function(kernel)((1,), (128,), (cupy.asarray(a), cupy.asarray(bt), cupy.asarray(c), d),
                                shared_mem=shared_bytes)
    return cupy.asnumpy(d)


def roundings_apart(gpu, model, a, bt, c) -> float:
    """The largest difference of two results, in float32 roundings (2^-24) of the magnitudes
    summed for it, |c| + sum |a*b| (a and bt the operands' values)."""
    magnitude = np.abs(c.astype(np.float64)) + np.abs(a.astype(np.float64)) @ np.abs(bt.astype(np.float64)).T
    return float((np.abs(gpu.astype(np.float64) - model) / magnitude / 2.0**-24).max())
