"""Models, not presets: an ``nn.Conv2d`` that runs autoconv, and :func:`convert` to swap
it into a model.

    model, report = autoconv.torch.convert(model)
    print(report)          # what was converted, what was left alone and why

:class:`Conv2d` is an ``nn.Conv2d`` (same parameters, state dict, hooks and repr) whose
forward calls :func:`autoconv.torch.conv2d` for CUDA inputs and ``nn.Conv2d``'s own for
CPU inputs; non-zero ``padding_mode`` pads the input first, as ``nn.Conv2d`` does.
:func:`convert` changes the class of each eligible layer in place (the way
``torch.nn.utils.parametrize`` does), so parameters, their identity (optimizers keep
working) and hooks stay.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from autoconv.errors import ProblemError
from autoconv.torch.functional import conv2d


class Conv2d(nn.Conv2d):
    """``nn.Conv2d`` whose forward runs autoconv's tuned kernel on CUDA."""

    def _conv_forward(self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        if not input.is_cuda:
            return super()._conv_forward(input, weight, bias)
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv2d(input, weight, bias, self.stride, 0, self.dilation)
        return conv2d(input, weight, bias, self.stride, self.padding, self.dilation)


@dataclass
class ConversionReport:
    """What :func:`convert` did: the layers it converted and those it left alone, with why."""
    converted: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"autoconv.torch.convert: {len(self.converted)} Conv2d layers run autoconv, "
                 f"{len(self.skipped)} left to PyTorch"]
        lines += [f"  left alone: {name}: {why}" for name, why in self.skipped.items()]
        return "\n".join(lines)


def ineligible_reason(module: nn.Module) -> str | None:
    """Why ``module`` cannot run autoconv's kernels, or None when it can."""
    if type(module) is Conv2d:
        return None
    if type(module) is not nn.Conv2d:
        return f"a subclass of nn.Conv2d ({type(module).__name__}) whose forward may differ"
    if module.groups != 1:
        return f"grouped convolution (groups={module.groups}): autoconv computes groups=1 only"
    if module.weight.dtype != torch.float32:
        return f"weights are {str(module.weight.dtype).replace('torch.', '')}: autoconv computes float32 only"
    if isinstance(module.padding, str) and module.padding == "same" and tuple(module.stride) != (1, 1):
        return "padding='same' with a stride"
    return None


def convert(model: nn.Module, *, inplace: bool = False) -> tuple[nn.Module, ConversionReport]:
    """Make every eligible ``nn.Conv2d`` of ``model`` (groups=1, float32 weights) an
    autoconv :class:`Conv2d`.

    Args:
        model: any module (the model itself may be an ``nn.Conv2d``).
        inplace: convert ``model`` itself instead of a deep copy.

    Returns:
        ``(model, report)``: the converted model and a :class:`ConversionReport`.
    """
    if not isinstance(model, nn.Module):
        raise ProblemError("model", type(model).__name__, "expected a torch.nn.Module")
    if not inplace:
        model = copy.deepcopy(model)
    report = ConversionReport()
    for name, module in model.named_modules():
        if not isinstance(module, nn.Conv2d):
            continue
        label = name or type(module).__name__
        why = ineligible_reason(module)
        if why is not None:
            report.skipped[label] = why
            continue
        module.__class__ = Conv2d
        report.converted.append(label)
    return model, report
