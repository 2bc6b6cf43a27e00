"""What PyTorch's settings say about its own convolutions: the precision its cuDNN convolutions
of float32 tensors compute in (``torch.backends.cudnn.conv.fp32_precision``, or ``allow_tf32``
before that existed). Read at every call: a flag a user changes takes effect at once."""

from __future__ import annotations

import torch


def _legacy_fp32_precision(backend: str, op: str) -> str:
    """``torch._C._get_fp32_precision_getter`` for PyTorch before 2.9 (cuDNN convolutions
    only): ``"tf32"`` where ``torch.backends.cudnn.allow_tf32``, else ``"ieee"``."""
    return "tf32" if torch.backends.cudnn.allow_tf32 else "ieee"


#: PyTorch's (backend, op) -> "tf32" | "ieee" | "none" getter behind
#: ``torch.backends.cudnn.conv.fp32_precision`` (PyTorch 2.9 and later; 0.1 us where the
#: attribute costs 1 us). There ``allow_tf32`` raises once conv and RNN settings differ, so
#: it is read only in PyTorch without the getter.
_conv_fp32_precision = getattr(torch._C, "_get_fp32_precision_getter", _legacy_fp32_precision)


def pytorch_precision() -> str:
    """``"tf32"`` where PyTorch currently lets its cuDNN convolutions use TF32
    (``torch.backends.cudnn.conv.fp32_precision == "tf32"``; ``"none"``, what
    ``allow_tf32 = False`` leaves, and ``"ieee"`` do not), else ``"fp32"``: the precision an
    autoconv call with ``precision=None`` computes. Read at every call (about 0.15 us)."""
    return "tf32" if _conv_fp32_precision("cuda", "conv") == "tf32" else "fp32"
