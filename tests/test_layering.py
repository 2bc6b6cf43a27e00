"""The packages' dependency rules (``[tool.importlinter]`` in pyproject.toml: the layers, and
what the runtime users call may not import) hold for this checkout, as ``lint-imports`` checks
them in CI."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("importlinter") is None,
                    reason="import-linter is not installed (it is in the test extra: pip install -e '.[test]')")
def test_the_import_contracts_are_kept():
    # (a process of its own, reading this checkout's autoconv, without writing a cache into it)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    done = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()", "--no-cache", "--no-logo", str(ROOT / "pyproject.toml")],
                          cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300)
    assert "Contracts: " in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0, done.stdout[done.stdout.find("Broken contracts"):] + done.stderr
