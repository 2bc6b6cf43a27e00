"""Shared test set-up.

- Tests marked ``gpu`` need CuPy and a CUDA GPU; they are skipped (with the reason)
  where either is missing, and run on the device machine.
- ``seed`` gives each test a random seed that changes per run unless
  ``AUTOCONV_TEST_SEED`` is set; the run's seed is printed so a failure reproduces.
"""

from __future__ import annotations

import os
import random

import pytest

_RUN_SEED = int(os.environ.get("AUTOCONV_TEST_SEED", random.SystemRandom().randrange(2**31)))


def pytest_report_header(config):
    return f"autoconv test seed: {_RUN_SEED} (reproduce with AUTOCONV_TEST_SEED={_RUN_SEED})"


def _gpu_skip_reason() -> str | None:
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA GPU"
    except Exception as err:  # CUDA driver missing or broken: report why
        return f"no usable CUDA GPU ({type(err).__name__}: {err})"
    return None


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    reason = _gpu_skip_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def seed(request) -> int:
    """A per-test seed derived from the run's seed and the test's name."""
    return (_RUN_SEED * 1_000_003 + sum(map(ord, request.node.nodeid))) % (2**31)


@pytest.fixture(scope="session")
def run_seed() -> int:
    return _RUN_SEED
