"""Tuning configs: the pipeline's first stage, a YAML file in, a checked, frozen
:class:`~autoconv.config.tune_config.TuneConfig` out.

A layer of its own, above the kernels and the cache and below the search: checking a
config needs the registered kernel families (``families:`` is validated against them, and
every problem needs a selected family that can run it) and the default cache location
(where ``tune`` writes when the config names no ``cache:``). The problems it reads
(:mod:`autoconv.problems`) sit below the kernels and know neither.

- :mod:`~autoconv.config.load`: :func:`~autoconv.config.load.load_config`, a file read with
  care, then checked.
- :mod:`~autoconv.config.schema`: the file's format and its checks, every error located.
- :mod:`~autoconv.config.tune_config`: :class:`~autoconv.config.tune_config.TuneConfig` and the
  command line's overrides (``--precision``, ``--layout``).
- :mod:`~autoconv.config.budget`: :class:`~autoconv.config.budget.Budget` and the rules numeric
  settings follow, in a file and on the command line.
- :mod:`~autoconv.config.outputs`: :func:`~autoconv.config.outputs.check_outputs`, whether a run can
  write its results folder, storage and cache, checked before it starts.
- :mod:`~autoconv.config.yaml_nodes`: YAML read as nodes, every error located (the schema's reader).
"""
