"""autoconv: an autotuning CUDA kernel generator for 2-D convolution."""

from autoconv._version import __version__
from autoconv.problems.problem import ConvProblem, make_problem, parse_spec

__all__ = ["ConvProblem", "__version__", "conv2d", "make_problem", "parse_spec"]


def __getattr__(name: str):
    # autoconv.conv2d is imported on first use, so `import autoconv` never needs CuPy.
    if name == "conv2d":
        from autoconv.runtime.api import conv2d
        return conv2d
    raise AttributeError(f"module 'autoconv' has no attribute {name!r}")
