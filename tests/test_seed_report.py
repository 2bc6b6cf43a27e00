"""A failing run names its seed, even with ``-q`` (which drops the header that also names it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(tmp_path: Path, body: str) -> str:
    (tmp_path / "test_sample.py").write_text(f"def test_sample(seed):\n    {body}\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                             "--rootdir", str(tmp_path), str(tmp_path / "test_sample.py")],
                            cwd=ROOT, env={**os.environ, "AUTOCONV_TEST_SEED": "12345"},
                            capture_output=True, text=True, timeout=120)
    return result.stdout


def test_a_failure_is_followed_by_the_runs_seed(tmp_path):
    assert "reproduce with AUTOCONV_TEST_SEED=12345" in run_pytest(tmp_path, "assert seed < 0")


def test_a_quiet_run_that_passes_does_not_repeat_it(tmp_path):
    assert "AUTOCONV_TEST_SEED" not in run_pytest(tmp_path, "assert seed >= 0")
