"""What to tune: convolution problems, the expressions search spaces compute with, model
presets, and a problem's tensors as kernels take them.

The lowest layer of the pipeline above the shared helpers (errors, dtypes): it imports
nothing else of autoconv, so the kernels, the verification and everything above can use
it. Reading a tuning config, which needs the kernel families and the cache's location,
is :mod:`autoconv.config`, above them.

- :mod:`~autoconv.problems.problem`: :class:`ConvProblem`, spec strings, padding rules.
- :mod:`~autoconv.problems.expressions`: the whitelisted arithmetic of search-space files.
- :mod:`~autoconv.problems.expression_arrays`: that arithmetic over many configurations at once.
- :mod:`~autoconv.problems.models`: the conv layers of well-known networks.
- :mod:`~autoconv.problems.buffers`: a problem's tensors as its kernels take them, and back.
"""
