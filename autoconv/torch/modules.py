"""Models, not presets: an ``nn.Conv2d`` that runs autoconv, and :func:`convert` to swap
it into a model.

    model, report = autoconv.torch.convert(model)                      # precision: PyTorch's setting
    model, report = autoconv.torch.convert(model, precision="tf32")    # or one for every layer
    model, report = autoconv.torch.convert(model.eval(), fuse=True)    # inference: BatchNorm folded
    print(report)          # what was converted, what was left alone and why

:class:`Conv2d` is an ``nn.Conv2d`` (same parameters, state dict, hooks and repr) whose
forward calls :func:`autoconv.torch.conv2d` for CUDA inputs and ``nn.Conv2d``'s own for
CPU inputs; non-zero ``padding_mode`` pads the input first, as ``nn.Conv2d`` does.
:func:`convert` changes the class of each eligible layer in place (the way
``torch.nn.utils.parametrize`` does), so parameters, their identity (optimizers keep
working) and hooks stay.

A layer's ``precision`` (``"fp32"``, ``"tf32"``, or None: PyTorch's setting for cuDNN
convolutions, read per call; see :func:`autoconv.torch.conv2d`) is a plain attribute:
set it on a layer, or for every layer with ``convert(model, precision=...)``.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from autoconv.errors import ProblemError
from autoconv.runtime.arguments import check_precision
from autoconv.torch.functional import conv2d
from autoconv.torch.fusion import FOLDABLE_CONVOLUTIONS, fold_batch_norms

logger = logging.getLogger(__name__)


class Conv2d(nn.Conv2d):
    """``nn.Conv2d`` whose forward runs autoconv's tuned kernel on CUDA.

    Takes ``nn.Conv2d``'s arguments and ``precision``: ``"fp32"``, ``"tf32"``, or None
    (the default) for PyTorch's setting for cuDNN convolutions at each call."""

    #: The precision of the forward on CUDA: "fp32", "tf32", or None for PyTorch's setting.
    #: (A class attribute too, so that layers :func:`convert` re-classes have one.)
    precision: str | None = None

    def __init__(self, *args, precision: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.precision = None if precision is None else check_precision(precision)

    def extra_repr(self) -> str:
        text = super().extra_repr()
        return text if self.precision is None else f"{text}, precision={self.precision!r}"

    def _conv_forward(self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        if not input.is_cuda:
            return super()._conv_forward(input, weight, bias)
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv2d(input, weight, bias, self.stride, 0, self.dilation, precision=self.precision)
        return conv2d(input, weight, bias, self.stride, self.padding, self.dilation, precision=self.precision)


FOLDABLE_CONVOLUTIONS.add(Conv2d)   # (its forward is nn.Conv2d's on the GPU's kernels)


@dataclass
class ConversionReport:
    """What :func:`convert` did: the layers it converted and those it left alone, with why; with
    ``fuse``, the BatchNorm layers folded into a convolution (-> which one) and those left, with why."""
    converted: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    folded: dict[str, str] = field(default_factory=dict)
    unfused: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"autoconv.torch.convert: {len(self.converted)} Conv2d layers run autoconv, "
                 f"{len(self.skipped)} left to PyTorch"]
        lines += [f"  left alone: {name}: {why}" for name, why in self.skipped.items()]
        if self.folded or self.unfused:
            lines.append(f"  {len(self.folded)} BatchNorm layers folded into their convolutions, "
                         f"{len(self.unfused)} not")
            lines += [f"  not folded: {name}: {why}" for name, why in self.unfused.items()]
        return "\n".join(lines)


def ineligible_reason(module: nn.Module) -> str | None:
    """Why ``module`` cannot run autoconv's kernels, or None when it can."""
    if type(module) is Conv2d:
        return None
    if type(module) is not nn.Conv2d:
        return f"a subclass of nn.Conv2d ({type(module).__name__}) whose forward may differ"
    if module.groups != 1:
        return f"grouped convolution (groups={module.groups}): autoconv computes groups=1 only"
    if module.weight.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return (f"weights are {str(module.weight.dtype).replace('torch.', '')}: autoconv computes float32, "
                "bfloat16 and float16")
    if isinstance(module.padding, str) and module.padding == "same" and tuple(module.stride) != (1, 1):
        return "padding='same' with a stride"
    return None


def convert(model: nn.Module, *, inplace: bool = False, precision: str | None = None,
            fuse: bool = False) -> tuple[nn.Module, ConversionReport]:
    """Make every eligible ``nn.Conv2d`` of ``model`` (groups=1; float32, bfloat16 or float16 weights) an
    autoconv :class:`Conv2d`.

    Args:
        model: any module (the model itself may be an ``nn.Conv2d``).
        inplace: convert ``model`` itself instead of a deep copy (with ``fuse``, the model
            returned is a folded copy, a ``torch.fx.GraphModule``, whatever ``inplace`` says).
        precision: ``"fp32"`` or ``"tf32"`` for every converted layer (autoconv layers
            already in the model included); None (the default) leaves it to PyTorch's setting
            for cuDNN convolutions at each call, and autoconv layers already there keep theirs.
        fuse: for inference (``model`` in eval mode): fold each BatchNorm2d that only a
            convolution's output feeds into that convolution first
            (:func:`autoconv.torch.fusion.fold_batch_norms`); the report lists what was folded and
            what was not, with why. Tune the folded model's problems (``autoconv tune --model ...
            --fuse``): its convolutions have a bias.

    Returns:
        ``(model, report)``: the converted model and a :class:`ConversionReport`.

    Raises:
        ProblemError: ``model`` is not a module, ``precision`` is not one, ``inplace`` or ``fuse``
            is not a bool, or ``fuse`` on a model in training mode.
    """
    if not isinstance(model, nn.Module):
        raise ProblemError("model", type(model).__name__, "expected a torch.nn.Module")
    for name, flag in (("inplace", inplace), ("fuse", fuse)):
        if not isinstance(flag, bool):
            raise ProblemError(name, flag, "expected True or False")
    if precision is not None:
        precision = check_precision(precision)
    report = ConversionReport()
    if fuse:
        folded, fusion = fold_batch_norms(model)   # (a copy, folded)
        model = copy.deepcopy(model) if folded is model and not inplace else folded   # (it could not copy it)
        report.folded, report.unfused = fusion.folded, fusion.unfused
    elif not inplace:
        model = copy.deepcopy(model)
    for name, module in model.named_modules():
        if not isinstance(module, nn.Conv2d):
            continue
        label = name or type(module).__name__
        why = ineligible_reason(module)
        if why is not None:
            report.skipped[label] = why
            continue
        module.__class__ = Conv2d
        if precision is not None:
            cast(Conv2d, module).precision = precision
        report.converted.append(label)
    logger.info("%s", report)
    return model, report
