"""autoconv: an autotuning CUDA kernel generator for 2-D convolution.

:func:`conv2d` is the one entry point for every kind of GPU array: it sits above the runtime
(:mod:`autoconv.runtime`, CuPy and other arrays) and the PyTorch operator
(:mod:`autoconv.torch`, built on the runtime), and imports them when first called, so
``import autoconv`` needs neither CuPy nor PyTorch.
"""

import logging

from autoconv._version import __version__
from autoconv.problems.problem import ConvProblem, make_problem, parse_spec

__all__ = ["ConvProblem", "__version__", "conv2d", "make_problem", "parse_spec"]

# Diagnostics go to the ``autoconv`` loggers (``logging.getLogger(__name__)`` in each module), at
# INFO and DEBUG: shown where the application configures logging (the command line does, with
# --log-level), silent otherwise. What a user must see is a warning (warnings.warn), not a log record.
logging.getLogger(__name__).addHandler(logging.NullHandler())


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, out=None, precision=None):
    """``y = conv2d(x, w) + bias`` with the tuned kernel: PyTorch tensors through
    :func:`autoconv.torch.conv2d`, other GPU arrays through :func:`autoconv.runtime.conv2d`
    (the arguments, precisions and errors are described in :mod:`autoconv.runtime.api`).

    Args:
        precision: ``"fp32"``, ``"tf32"``, or None: PyTorch's setting for cuDNN
            convolutions for PyTorch tensors, ``"fp32"`` for other arrays.

    Returns:
        ``y`` of shape (N, K, P, Q): a PyTorch tensor for PyTorch input, else a CuPy array
        (``out`` itself when given).

    Raises:
        ProblemError: wrong dtype, shapes, layout, device, precision or parameters.
        BackendUnavailable: CuPy is not installed (for arrays other than PyTorch tensors).
    """
    from autoconv.runtime import api

    if not api.is_torch(x):
        return api.conv2d(x, w, bias, stride, padding, dilation, out, precision)
    precision = api.check_call(x, w, bias, out, precision)
    from autoconv.torch.functional import conv2d as torch_conv2d

    return torch_conv2d(x, w, bias, stride, padding, dilation, out=out, precision=precision)
