"""The float64 reference the PyTorch GPU tests compare autoconv's outputs with."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def reference(x, w, bias, stride, padding, dilation):
    """float64 convolution with (top, bottom, left, right) padding."""
    top, bottom, left, right = padding
    xp = F.pad(x.double(), (left, right, top, bottom))
    return F.conv2d(xp, w.double(), None if bias is None else bias.double(), stride, 0, dilation)


def relative_error(got, want) -> float:
    """The relative L2 error of ``got`` against ``want``; a non-finite element fails outright."""
    assert torch.isfinite(got).all(), "non-finite output (an unwritten or wrong element)"
    return float((got.double() - want).norm() / want.norm())
