"""What to tune: convolution problems, the expressions search spaces compute with, tuning
configs (YAML) and model presets.

- :mod:`~autoconv.problems.problem`: :class:`ConvProblem`, spec strings, padding rules.
- :mod:`~autoconv.problems.expressions`: the whitelisted arithmetic of search-space files.
- :mod:`~autoconv.problems.config`: a config file in, a checked :class:`TuneConfig` out.
- :mod:`~autoconv.problems.yaml_nodes`: YAML read as nodes, every error located (the config's reader).
- :mod:`~autoconv.problems.models`: the conv layers of well-known networks.
- :mod:`~autoconv.problems.buffers`: a problem's tensors as its kernels take them, and back.
"""
