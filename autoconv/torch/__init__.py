"""autoconv inside PyTorch programs (needs PyTorch; ``import autoconv`` does not).

- :func:`conv2d`: :func:`torch.nn.functional.conv2d`'s signature on autoconv's tuned
  kernels; the operator ``torch.ops.autoconv.conv2d`` behind it works under autograd,
  CUDA graphs and ``torch.compile(fullgraph=True)`` (:mod:`autoconv.torch.ops`; how Inductor
  lays out its tensors: :mod:`autoconv.torch.inductor`).
  ``precision`` (``"fp32"``, ``"tf32"``, or None: PyTorch's setting for cuDNN convolutions,
  :func:`pytorch_precision`) picks float32 accuracy or TF32 tensor-core products.
- :class:`Conv2d` and :func:`convert`: run a model's convolutions on autoconv
  (:mod:`autoconv.torch.modules`); ``convert(model.eval(), fuse=True)`` and
  :func:`fold_batch_norms` fold each BatchNorm into its convolution for inference
  (:mod:`autoconv.torch.fusion`).
- :func:`conv_problems` and :func:`write_config`: the convolution problems of a real
  model, found by running it once, as a tuning config (:mod:`autoconv.torch.problems`).

Kernels come from the winners' cache (``autoconv tune``), as for :func:`autoconv.conv2d`:
tune a model's problems first, or untuned shapes run a default kernel (with a warning).
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(f"autoconv.torch needs PyTorch ({err}); install it (https://pytorch.org) "
                      "or use autoconv.conv2d with CuPy arrays") from None

from autoconv.torch.functional import conv2d, pytorch_precision
from autoconv.torch.fusion import FusionReport, fold_batch_norms
from autoconv.torch.modules import Conv2d, ConversionReport, convert
from autoconv.torch.ops import CaptureError, clear_weight_cache
from autoconv.torch.problems import config_text, conv_problems, write_config

__all__ = ["CaptureError", "Conv2d", "ConversionReport", "FusionReport", "clear_weight_cache", "config_text",
           "conv2d", "conv_problems", "convert", "fold_batch_norms", "pytorch_precision", "write_config"]
