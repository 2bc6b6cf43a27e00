"""Reliability (issues 7, 65): ``autoconv.conv2d`` refuses host arrays and missing ones, with or
without CuPy (``conv2d(None, None)`` said "CuPy is not installed")."""

from __future__ import annotations

import pytest

from autoconv.errors import BackendUnavailable, ProblemError


class CudaArrayLike:
    """Stands for a GPU array (it has ``__cuda_array_interface__``); never converted here."""

    __cuda_array_interface__ = {"shape": (1, 2, 5, 5), "typestr": "<f4", "data": (0, False), "version": 3}


class HostDLPack:
    """An array of another library on the CPU (DLPack device type 1), or in pinned host memory (3)."""

    def __init__(self, device_type: int):
        self.device_type = device_type

    def __dlpack__(self, stream=None):
        raise AssertionError("a host array must not be converted")

    def __dlpack_device__(self):
        return (self.device_type, 0)


def test_conv2d_refuses_host_arrays_even_without_cupy(monkeypatch):
    import numpy

    import autoconv
    import autoconv.gpu.device

    def no_cupy():
        raise BackendUnavailable("CuPy is not installed (test)")
    monkeypatch.setattr(autoconv.gpu.device, "require_cupy", no_cupy)
    x = numpy.zeros((1, 2, 5, 5), numpy.float32)
    w = numpy.zeros((3, 2, 3, 3), numpy.float32)
    gpu = CudaArrayLike()
    cases = [
        ((x, gpu), {}, "x", "x is a NumPy array in host memory"),
        ((gpu, w), {}, "w", "cupy.asarray(w)"),
        ((gpu, gpu), {"bias": numpy.zeros(3, numpy.float32)}, "bias", "host memory"),
        ((gpu, gpu), {"out": numpy.zeros((1, 3, 3, 3), numpy.float32)}, "out", "host memory"),
        ((x.tolist(), gpu), {}, "x", "expected a CuPy array, a CUDA tensor"),
        ((HostDLPack(1), gpu), {}, "x", "not in CUDA device memory (DLPack device type 1"),
        ((HostDLPack(3), gpu), {}, "x", "DLPack device type 3"),
        ((gpu, 3.0), {}, "w", "expected a CuPy array"),
        ((None, None), {}, "x", "x is required: a (N, C, H, W) array in GPU memory"),
        ((gpu, None), {}, "w", "w is required: a (K, C, R, S) array in GPU memory"),
    ]
    for args, kwargs, name, fragment in cases:
        with pytest.raises(ProblemError) as caught:
            autoconv.conv2d(*args, **kwargs)
        message = str(caught.value)
        assert message.startswith(f"{name}=") and fragment in message, message
        assert "CuPy arrays or CUDA tensors" in message, message
    # GPU-looking arrays get as far as needing CuPy.
    with pytest.raises(BackendUnavailable, match="CuPy"):
        autoconv.conv2d(gpu, gpu)
