"""What evaluates a candidate kernel for the search.

- :mod:`~autoconv.backends.base`: the :class:`Backend` interface and what it returns
  (:class:`TrialResult`, :class:`Status`).
- :mod:`~autoconv.backends.fake`: deterministic synthetic timings, no GPU.
- :mod:`~autoconv.backends.factory`: :func:`make_backend`, the one place that knows every
  backend (the CuPy GPU backend lives in :mod:`autoconv.gpu`).
"""
