"""How kernels are made: families, their search spaces, rendering and offline compiling.

- :mod:`~autoconv.kernels.families`: each family's template, search space and launches.
- :mod:`~autoconv.kernels.space`: a family's parameters, derived values and constraints.
- :mod:`~autoconv.kernels.render`: (family, problem, config) -> CUDA source.
- :mod:`~autoconv.kernels.resources`: where ``templates/`` and ``search_spaces/`` live.
- :mod:`~autoconv.kernels.fingerprint`: one hash of templates, search spaces and launch code.
- :mod:`~autoconv.kernels.limits`: the device limits that decide which configs are valid.
- :mod:`~autoconv.kernels.nvcc`: compile with ``nvcc`` and read ptxas's report (no GPU).
"""
