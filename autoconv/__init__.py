"""autoconv: an autotuning CUDA kernel generator for 2-D convolution."""

__version__ = "0.1.0"

from autoconv.problem import ConvProblem, make_problem, parse_spec  # noqa: E402

__all__ = ["ConvProblem", "__version__", "make_problem", "parse_spec"]
