"""How TorchInductor lays out the tensors of ``torch.ops.autoconv.conv2d`` in a compiled graph.

Inductor turns a graph's activations channels_last (its layout optimisation) only where it finds
``aten.convolution`` nodes; a converted model has none, so Inductor would keep PyTorch's NCHW
default and hand the operator NCHW tensors, which tf32 then runs through a transposed copy of x
(and 16-bit calls through a channels_last copy). So, once Inductor is loaded, the operator gets a
layout constraint of its own (:func:`register_layout`): x and w channels_last where the operator
computes NHWC on channels_last tensors (:func:`autoconv.torch.layouts.computes_nhwc`: 16-bit
tensors, and tf32 on a GPU with a family that computes tf32 in NHWC), else contiguous. The
producer of x then writes it channels_last in the first place; weights that are graph inputs in
another layout (an NCHW model's parameters) are copied at each call of the graph, as any input
Inductor must re-lay out (a channels_last model, or Inductor's freezing, avoids that).

Such a graph runs tf32 layers of an NCHW model as NHWC problems: ``autoconv tune --model ...
--compile`` tunes those (:func:`autoconv.torch.layouts.compiled_layout`).

Nothing here imports Inductor: :func:`register_layout` runs when the operator's fake implementation
sees that Inductor's lowering is loaded (tracing for Inductor loads it before lowering the graph),
so that ``import autoconv.torch`` stays light.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import torch

from autoconv.torch.layouts import computes_nhwc

#: The module whose presence says that Inductor may lower a graph in this process.
INDUCTOR_LOWERING = "torch._inductor.lowering"


def register_layout_if_inductor_is_loaded() -> None:
    """:func:`register_layout` where Inductor's lowering is loaded (else nothing: cheap)."""
    if INDUCTOR_LOWERING in sys.modules:
        register_layout()


@functools.cache
def register_layout() -> None:
    """Lower the operator as an Inductor fallback kernel (it calls the operator) whose inputs
    follow :func:`_operator_layout`. Once per process."""
    from torch._inductor.lowering import make_fallback

    make_fallback(torch.ops.autoconv.conv2d.default, layout_constraint=_operator_layout)


@functools.cache
def _argument_names() -> tuple[str, ...]:
    """The operator's arguments, in its schema's order (x, w, bias, stride, ..., precision)."""
    return tuple(argument.name for argument in torch.ops.autoconv.conv2d.default._schema.arguments)


def _operator_layout(fx_node: Any, *args: Any, **kwargs: Any) -> tuple[tuple, dict]:
    """Inductor's layout constraint for one call of the operator: its IR arguments with x and w
    required channels_last where the call computes NHWC on channels_last tensors, else
    contiguous (the layouts the CUDA kernel would otherwise copy them to)."""
    from torch._inductor import ir

    names = _argument_names()
    bound = dict(zip(names, args))
    bound.update(kwargs)
    x = bound["x"]
    nhwc = wants_channels_last(x.get_device(), x.get_dtype(), bound.get("precision", "fp32"))
    require = ir.ExternKernel.require_channels_last if nhwc else ir.ExternKernel.require_contiguous
    laid_out = {name: require(bound[name]) for name in ("x", "w")}
    args = tuple(laid_out.get(name, value) for name, value in zip(names, args))
    kwargs = {name: laid_out.get(name, value) for name, value in kwargs.items()}
    return args, kwargs


def wants_channels_last(device: torch.device | None, dtype: torch.dtype, precision: str) -> bool:
    """Whether a call on ``device`` with ``dtype`` tensors at ``precision`` gets channels_last x and w."""
    return device is not None and device.type == "cuda" and computes_nhwc(dtype, precision, device.index)
