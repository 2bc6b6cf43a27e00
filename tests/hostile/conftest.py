"""Fixtures of the hostile run: ``hostile`` runs a case in a fresh sandbox; ``tuned`` is a
tuning run's state (config, journal, index, lock, cache, summary) made once per session, which
the cases that start from it copy (:func:`tests.hostile.states.copy_tuned`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.harness import Box, Case, run_case
from tests.hostile.states import make_tuned


@pytest.fixture(scope="session")
def tuned(tmp_path_factory, run_seed) -> Path:
    return make_tuned(tmp_path_factory.mktemp("tuned"), run_seed)


@pytest.fixture
def hostile(tmp_path, seed, monkeypatch, capfd, tuned):
    """``hostile(case)``: run ``case`` in a sandbox under ``tmp_path`` and check its invariants."""
    def run(case: Case) -> Box:
        return run_case(case, tmp_path / "box", seed, monkeypatch, capfd, tuned)
    return run
