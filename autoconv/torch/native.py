"""autoconv's autograd node in C++ (``autograd_node.cpp``), for eager calls that need gradients.

An eager training step of a converted model is host-bound, and the host time autoconv adds is
mostly its Python autograd node and the backward's call of ``aten.convolution_backward`` from
Python (docs/lab-notes/2026-12-02-training-step-host-bound.md). The node here does both in C++;
the forward still calls autoconv's kernel (:func:`autoconv.torch.ops.conv2d_cuda`) in Python.

Opt-in: ``AUTOCONV_NATIVE_AUTOGRAD=on``. Its first use builds it with
:mod:`torch.utils.cpp_extension` (a C++ compiler and ninja; about 40 s, once: PyTorch keeps the
build in its extensions folder). Where it cannot be built, one warning says why and the Python
node (:class:`autoconv.torch.ops.EagerConv2d`) runs, as it does with the variable unset.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

from autoconv import settings
from autoconv.torch import ops

SOURCE = Path(__file__).with_name("autograd_node.cpp")


def wanted() -> bool:
    """Whether ``AUTOCONV_NATIVE_AUTOGRAD`` asks for the C++ node (read at each call)."""
    return bool(settings.NATIVE_AUTOGRAD.value())


@functools.cache
def module() -> ModuleType | None:
    """The built extension, or None (with a warning, once) where it cannot be built."""
    from torch.utils.cpp_extension import load

    try:
        return load("autoconv_autograd_node", sources=[str(SOURCE)], extra_cflags=["-O2"], verbose=False)
    except Exception as err:  # a missing compiler or ninja, a failed build: the Python node serves
        warnings.warn(f"autoconv: AUTOCONV_NATIVE_AUTOGRAD=on, but the C++ autograd node could not be built "
                      f"({type(err).__name__}: {str(err).strip().splitlines()[-1] if str(err).strip() else ''}); "
                      "the Python node runs instead", RuntimeWarning, stacklevel=3)
        return None


def conv2d(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, stride: tuple, padding: tuple,
           dilation: tuple, precision: str) -> torch.Tensor | None:
    """The convolution through the C++ node (arguments as :func:`autoconv.torch.ops.conv2d_cuda`
    takes them), or None where the node could not be built."""
    built = module()
    if built is None:
        return None
    return built.conv2d(x, w, bias, _geometry(stride, padding, dilation),
                        _forward_kernel(stride, padding, dilation, precision))


@functools.lru_cache(maxsize=4096)
def _geometry(stride: tuple, padding: tuple, dilation: tuple) -> list[int]:
    return [*stride, *padding, *dilation]


@functools.lru_cache(maxsize=4096)
def _forward_kernel(stride: tuple, padding: tuple, dilation: tuple, precision: str) -> Callable:
    """autoconv's forward for one layer's geometry and precision, as the node calls it."""
    return lambda x, w, bias: ops.conv2d_cuda(x, w, bias, stride, padding, dilation, precision)
