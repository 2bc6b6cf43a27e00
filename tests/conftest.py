"""Shared test set-up.

- Tests marked ``gpu`` need CuPy and a CUDA GPU; they are skipped (with the reason)
  where either is missing, and run on the device machine.
- ``seed`` gives each test a random seed that changes per run unless
  ``AUTOCONV_TEST_SEED`` is set; the run's seed is printed in the header and again after any
  failure (``-q`` drops the header), so a failure reproduces.
- ``fake_gpu``: ``autoconv`` commands run on the fake backend (``AUTOCONV_BACKEND=fake``).
- Helpers and configs that test files share are in ``tests/helpers.py`` (its asserts are
  rewritten like a test's).
- ``postgres_databases`` makes fresh databases on the PostgreSQL server named by
  ``$AUTOCONV_TEST_POSTGRES_URL`` (``eval "$(bash .ci/postgres start)"`` starts one; CI
  does); tests that need it are skipped without it.
"""

from __future__ import annotations

import os
import random
import uuid

import pytest

pytest.register_assert_rewrite("tests.helpers")

_RUN_SEED = int(os.environ.get("AUTOCONV_TEST_SEED", random.SystemRandom().randrange(2**31)))


def _seed_line() -> str:
    return f"autoconv test seed: {_RUN_SEED} (reproduce with AUTOCONV_TEST_SEED={_RUN_SEED})"


def pytest_report_header(config):
    return _seed_line()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # Again after failures: ``-q`` leaves the header out, and a GPU run's log may keep only its tail.
    if terminalreporter.stats.get("failed") or terminalreporter.stats.get("error"):
        terminalreporter.write_line(_seed_line())


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
    # The marker, not the keyword: every test under tests/gpu/ has the keyword "gpu" (its folder).
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    reason = _gpu_skip_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture
def seed(request) -> int:
    """A per-test seed derived from the run's seed and the test's name."""
    return (_RUN_SEED * 1_000_003 + sum(map(ord, request.node.nodeid))) % (2**31)


@pytest.fixture(scope="session")
def run_seed() -> int:
    return _RUN_SEED


@pytest.fixture
def fake_gpu(monkeypatch):
    """``autoconv`` commands run here on the fake backend (synthetic timings, no GPU)."""
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")


# ---- PostgreSQL -------------------------------------------------------------------------

POSTGRES_URL_VARIABLE = "AUTOCONV_TEST_POSTGRES_URL"


@pytest.fixture(scope="module")
def postgres_server() -> str:
    url = os.environ.get(POSTGRES_URL_VARIABLE)
    if not url:
        pytest.skip(f"{POSTGRES_URL_VARIABLE} is not set (start a server with `eval \"$(bash .ci/postgres start)\"`)")
    return url


class PostgresDatabases:
    """``databases()`` -> the URL of a new, empty PostgreSQL database on the test server;
    :meth:`drop_all` drops them. Each URL carries a password (the test server trusts local
    users, so it is ignored there) that messages must never show."""

    def __init__(self, server_url: str):
        from sqlalchemy import create_engine
        from sqlalchemy.engine import make_url

        self.admin = create_engine(server_url, isolation_level="AUTOCOMMIT")  # CREATE DATABASE needs it
        server = make_url(server_url)
        self.server = server if server.password is not None else server.set(password="not-shown-anywhere")
        self.created: list[str] = []

    def __call__(self) -> str:
        name = f"autoconv_test_{uuid.uuid4().hex[:12]}"
        self._admin(f"CREATE DATABASE {name}")
        self.created.append(name)
        return self.server.set(database=name).render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        """Drop the database of ``url`` now, cutting its connections."""
        from sqlalchemy.engine import make_url

        self._admin(f"DROP DATABASE IF EXISTS {make_url(url).database} WITH (FORCE)")

    def drop_all(self) -> None:
        for name in self.created:
            self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.admin.dispose()

    def _admin(self, statement: str) -> None:
        from sqlalchemy import text

        with self.admin.connect() as connection:
            connection.execute(text(statement))


@pytest.fixture
def postgres_databases(postgres_server):
    databases = PostgresDatabases(postgres_server)
    yield databases
    databases.drop_all()
